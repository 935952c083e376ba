import ArgumentParser
import StpctlKit
import StpdProtocol

struct CardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "card",
        abstract: "Card details checked as the SDK checks them, without a request to Stripe.",
        discussion: """
            Example:
              stpctl card validate --number "4242 4242 4242 4242" --exp-month 04 --exp-year 31 --cvc 123
            """,
        subcommands: [CardValidateCommand.self])
}

struct CardValidateCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: CardValidate.summary,
        discussion: "Prints the brand and each field's state.\n\n" + (CardValidate.description ?? ""))

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Option(help: "The card number, as typed (spaces are ignored).") var number: String?
    @Option(help: "The expiry month, as typed.") var expMonth: String?
    @Option(help: "The expiry year, as typed: two digits (or four).") var expYear: String?
    @Option(help: "The card verification code, as typed.") var cvc: String?

    func run() async throws {
        let params = CardValidate.Params(number: number, expMonth: expMonth, expYear: expYear, cvc: cvc)
        let result = try await global.connection().run { try await $0.call(CardValidate.self, params) }
        global.output.result(result) {
            Render.table([
                ("brand", $0.brand.rawValue), ("number", $0.number.rawValue), ("exp month", $0.expMonth.rawValue),
                ("exp year", $0.expYear.rawValue), ("cvc", $0.cvc.rawValue), ("card", $0.card.rawValue),
            ])
        }
    }
}

import StpdCore
import StpdProtocol

// A redirect's wire params as the domain takes them (docs/architecture.md: the contract's types
// are mapped to the domain's and back here, at the edge).

extension RedirectSessions.StartOptions {
    init(_ options: RedirectStartOptions) {
        self.init(mode: options.mode, opener: options.opener)
    }
}

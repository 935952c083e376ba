import JSONRPC
import StpctlKit
import Testing

@Suite struct CallParamsTests {
    func parse(_ arguments: String...) throws -> JSONValue? { try CallParams.parse(arguments) }

    @Test func noArgumentsSendNoParams() throws {
        #expect(try parse() == nil)
    }

    @Test func oneJSONObjectIsTakenAsIs() throws {
        #expect(try parse(#"{"id": "cus_1", "n": [1, 2]}"#) == ["id": "cus_1", "n": [1, 2]])
    }

    @Test func aJSONObjectMustBeAlone() {
        #expect(throws: CallParams.ParseError.self) { try parse(#"{"a": 1}"#, "b=2") }
    }

    @Test func malformedJSONObjectIsAnError() {
        #expect(throws: CallParams.ParseError.self) { try parse(#"{"a": 1"#) }
    }

    @Test func scalars() throws {
        let params = try parse("t=true", "f=false", "n=null", "i=42", "neg=-7", "d=2.5", "e=1e3", "s=cus_123", "empty=")
        #expect(
            params == [
                "t": true, "f": false, "n": nil, "i": 42, "neg": -7, "d": 2.5, "e": 1000.0, "s": "cus_123", "empty": "",
            ])
    }

    @Test(arguments: ["007", "1.", ".5", "-", "+1", "0x10", "True", "NULL", "1e", "١٢"])
    func notQuiteJSONScalarsStayStrings(text: String) throws {
        #expect(try parse("v=\(text)") == ["v": .string(text)])
    }

    @Test func integersKeepFullPrecision() throws {
        #expect(try parse("n=9007199254740993") == ["n": .int(9_007_199_254_740_993)])
    }

    @Test func numbersOutOfRangeAreAnError() {
        #expect(throws: CallParams.ParseError.self) { try parse("n=1e400") }
    }

    @Test func rawJSONValues() throws {
        let params = try parse(#"list=[1,"x",{"y":null}]"#, #"obj={"a":{"b":2}}"#, #"quoted="42""#)
        #expect(params == ["list": [1, "x", ["y": nil]], "obj": ["a": ["b": 2]], "quoted": "42"])
    }

    @Test(arguments: ["v={x", "v=[1,", #"v="abc"#, #"v={"a":1}x"#])
    func malformedRawJSONNamesTheKey(argument: String) {
        #expect {
            try parse(argument)
        } throws: { error in
            (error as? CallParams.ParseError)?.description.contains("'v'") == true
        }
    }

    @Test func dottedKeysBuildNestedObjects() throws {
        let params = try parse("a.b=1", "a.c=x", "a.d.e=true", "f=2")
        #expect(params == ["a": ["b": 1, "c": "x", "d": ["e": true]], "f": 2])
    }

    @Test func dottedKeysExtendARawObject() throws {
        #expect(try parse(#"a={"x":1}"#, "a.y=2") == ["a": ["x": 1, "y": 2]])
    }

    @Test func onlyTheFirstEqualsSignSplits() throws {
        #expect(try parse("url=https://x.test/?a=b") == ["url": "https://x.test/?a=b"])
    }

    @Test(arguments: [["a=1", "a=2"], ["a=1", "a.b=2"], ["a.b=1", "a=2"], ["a.b=1", "a.b.c=2"]])
    func conflictingKeysAreAnError(arguments: [String]) {
        #expect(throws: CallParams.ParseError.self) { try CallParams.parse(arguments) }
    }

    @Test(arguments: ["noequals", "=1", ".a=1", "a.=1", "a..b=1"])
    func malformedPairsAreAnError(argument: String) {
        #expect(throws: CallParams.ParseError.self) { try parse(argument) }
    }
}

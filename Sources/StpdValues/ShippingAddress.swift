// A shipping address with its recipient: what a payment context stores and the contract takes
// and shows alike (docs/architecture.md); its schemas are the contract's (StpdProtocol).

public struct ShippingAddressParams: Codable, Sendable, Hashable {
    public struct Address: Codable, Sendable, Hashable {
        public var line1: String?
        public var line2: String?
        public var city: String?
        public var state: String?
        public var postalCode: String?
        public var country: String?
        public init(
            line1: String? = nil, line2: String? = nil, city: String? = nil, state: String? = nil,
            postalCode: String? = nil,
            country: String? = nil
        ) {
            self.line1 = line1
            self.line2 = line2
            self.city = city
            self.state = state
            self.postalCode = postalCode
            self.country = country
        }
    }
    public var name: String?
    public var phone: String?
    public var email: String?
    public var address: Address
    public init(name: String? = nil, phone: String? = nil, email: String? = nil, address: Address) {
        self.name = name
        self.phone = phone
        self.email = email
        self.address = address
    }
}

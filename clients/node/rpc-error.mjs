/**
 * An error reply of stpd: `code`, `message` and `data` as the daemon sent them. A code the contract
 * lists is thrown as its own subclass (errors.mjs, generated: `NotFound`, `StripeCardError`...), so
 * `err instanceof RpcError` catches them all.
 */
export class RpcError extends Error {
  constructor(code, message, data) {
    super(message); // String(err) is then `NotFound: No such object`
    this.name = new.target.name;
    this.code = code;
    this.data = data;
  }
}

/** The connection to stpd closed (or broke) while a reply or an event was awaited on it. */
export class ConnectionClosed extends Error {
  constructor(message) {
    super(message);
    this.name = 'ConnectionClosed';
  }
}

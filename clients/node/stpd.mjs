/**
 * A client for stpd: JSON-RPC 2.0 over its Unix socket, with Node's `net` only (Node 18+).
 *
 *   import { Client, subscribe, NotFound } from './stpd.mjs';
 *   const client = await Client.connect();              // $STPD_SOCKET, $XDG_RUNTIME_DIR/stpd.sock, ...
 *   await client.call('daemon.ping');                   // { pong: true, version: '0.1.0' }
 *   try { await client.call('source.get', { id: 'src_x' }); } catch (err) { err instanceof NotFound }
 *   for await (const event of await subscribe({ since: 0 })) console.log(event.seq, event.type);
 *
 * Framing: one JSON text per line, both ways; the newline ends a frame. Replies come back as each
 * request finishes, matched by id, so calls may be made concurrently on one connection.
 */

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { EventEmitter } from 'node:events';

import { ConnectionClosed, RpcError } from './rpc-error.mjs';
import { ShuttingDown, errorFrom } from './errors.mjs';

export * from './errors.mjs';
export { ConnectionClosed, RpcError };

export const SYSTEM_SOCKET = '/run/stpd/stpd.sock';

/**
 * Where stpctl looks: $STPD_SOCKET; as root the system socket; else $XDG_RUNTIME_DIR/stpd.sock when
 * it exists; else the system socket.
 */
export function defaultSocketPath(env = process.env, uid = process.getuid?.() ?? -1, exists = fs.existsSync) {
  if (env.STPD_SOCKET) return env.STPD_SOCKET;
  if (uid === 0) return SYSTEM_SOCKET;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && exists(path.join(runtime, 'stpd.sock'))) return path.join(runtime, 'stpd.sock');
  return SYSTEM_SOCKET;
}

/**
 * One connection. Emits 'notification' (the whole message) for each server notification, and
 * 'close' once. `call` may be used concurrently: requests are pipelined, replies matched by id.
 */
export class Client extends EventEmitter {
  static connect(socketPath = defaultSocketPath()) {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(socketPath);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new Client(socket, socketPath));
      });
      socket.once('error', reject);
    });
  }

  #socket;
  #buffer = '';
  #nextId = 1;
  #pending = new Map(); // id -> { resolve, reject, timer }
  #closed = false;

  constructor(socket, socketPath) {
    super();
    this.path = socketPath;
    this.#socket = socket;
    socket.setEncoding('utf8'); // multi-byte characters split across chunks are decoded whole
    socket.on('data', (chunk) => this.#receive(chunk));
    socket.on('error', (err) => this.#end(err));
    socket.on('close', () => this.#end(null));
  }

  get closed() {
    return this.#closed;
  }

  /** Calls METHOD with PARAMS (an object); resolves to its result, rejects with its RpcError. */
  call(method, params = undefined, { timeout = 0 } = {}) {
    if (this.#closed || this.#socket.destroyed) {
      return Promise.reject(new ConnectionClosed(`the connection to ${this.path} is closed`));
    }
    const id = this.#nextId++;
    const request = { jsonrpc: '2.0', id, method };
    if (params !== undefined) request.params = params;
    return new Promise((resolve, reject) => {
      const timer = timeout > 0
        ? setTimeout(() => {
          this.#pending.delete(id);
          reject(new Error(`no reply to ${method} within ${timeout} ms`));
        }, timeout)
        : null;
      this.#pending.set(id, { resolve, reject, timer });
      this.#socket.write(`${JSON.stringify(request)}\n`);
    });
  }

  /** Sends a notification: a request without id, which gets no reply. */
  notify(method, params = undefined) {
    const message = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    this.#socket.write(`${JSON.stringify(message)}\n`);
  }

  /** Stops reading (the daemon's flow control then applies to this connection), and resumes. */
  pause() {
    this.#socket.pause();
  }

  resume() {
    this.#socket.resume();
  }

  close() {
    this.#socket.destroy();
  }

  #receive(chunk) {
    this.#buffer += chunk;
    let end;
    while ((end = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        this.#socket.destroy(new Error(`not JSON from ${this.path}: ${line.slice(0, 200)}`));
        return;
      }
      for (const item of Array.isArray(message) ? message : [message]) this.#dispatch(item);
    }
  }

  #dispatch(item) {
    if (item === null || typeof item !== 'object') return;
    if (!('id' in item) && 'method' in item) {
      this.emit('notification', item);
      return;
    }
    const waiter = this.#pending.get(item.id);
    if (!waiter) return;
    this.#pending.delete(item.id);
    if (waiter.timer) clearTimeout(waiter.timer);
    if ('error' in item) waiter.reject(errorFrom(item.error));
    else waiter.resolve(item.result);
  }

  #end(err) {
    if (this.#closed) return;
    this.#closed = true;
    const closed = new ConnectionClosed(`the connection to ${this.path} closed${err ? `: ${err.message}` : ''}`);
    for (const waiter of this.#pending.values()) {
      if (waiter.timer) clearTimeout(waiter.timer);
      waiter.reject(closed);
    }
    this.#pending.clear();
    this.emit('close', err);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Errors after which connecting again may work: the daemon is stopping, restarting or starting. */
function transient(err) {
  return err instanceof ConnectionClosed || err instanceof ShuttingDown
    || ['ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'EPIPE'].includes(err?.code);
}

/**
 * The events of one `events.subscribe`, as an async iterator, on a connection of its own that
 * survives `events.dropped`, restarts and socket activation. `position` is the seq up to which
 * every matching event was queued for the consumer (or did not match): each new subscription
 * passes it as `since`, so nothing is missed and nothing comes twice. While more than
 * `highWaterMark` events wait for the consumer it stops reading, and the daemon may drop it.
 * CursorExpired and CursorAhead on a resume are thrown: retrying cannot fix them.
 */
export class Subscription {
  #client = null;
  #queue = [];
  #waiters = [];
  #error = null;
  #closed = false;

  constructor(socketPath, { since = null, filter = null, reconnect = true, maxDelay = 2000, highWaterMark = 64 } = {}) {
    this.path = socketPath;
    this.filter = filter;
    this.position = since;
    this.subscription = null;
    this.reconnect = reconnect;
    this.maxDelay = maxDelay;
    this.highWaterMark = highWaterMark;
    this.drops = 0;
    this.reconnects = 0;
  }

  /** Subscribes; rejects with what the first attempt met (nothing is retried yet). */
  async open() {
    await this.#subscribe();
    return this;
  }

  /** The next event (the params of an `event` notification); null once closed. */
  async next() {
    if (this.#queue.length > 0) {
      const event = this.#queue.shift();
      if (this.#queue.length <= this.highWaterMark / 2) this.#client?.resume();
      return event;
    }
    if (this.#error) throw this.#error;
    if (this.#closed) return null;
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      const event = await this.next();
      if (event === null) return;
      yield event;
    }
  }

  close() {
    this.#closed = true;
    this.#client?.close();
    for (const waiter of this.#waiters.splice(0)) waiter.resolve(null);
  }

  async #subscribe() {
    const client = await Client.connect(this.path);
    const params = {};
    if (this.position !== null) params.since = this.position;
    if (this.filter) params.filter = this.filter;
    // The first events may come in the same read as the reply, before the reply's promise has
    // settled: they are held until the subscription id is known.
    const early = [];
    let ready = false;
    client.on('notification', (message) => (ready ? this.#notified(client, message) : early.push(message)));
    client.on('close', () => this.#lost(client));
    let reply;
    try {
      reply = await client.call('events.subscribe', params);
    } catch (err) {
      client.close();
      throw err;
    }
    if (this.position === null) this.position = reply.latestSeq;
    this.subscription = reply.subscription;
    this.#client = client;
    ready = true;
    for (const message of early) this.#notified(client, message);
    if (this.#closed) client.close();
  }

  #notified(client, message) {
    if (client !== this.#client) return;
    const params = message.params ?? {};
    if (params.subscription !== this.subscription) return;
    if (message.method === 'event') {
      if (this.position !== null && params.seq <= this.position) return; // resent after a resume
      this.position = params.seq;
      const waiter = this.#waiters.shift();
      if (waiter) waiter.resolve(params);
      else {
        this.#queue.push(params);
        if (this.#queue.length >= this.highWaterMark) client.pause();
      }
    } else if (message.method === 'events.dropped') {
      // Every event up to resumeSince was sent, and each one read was queued: the rest did not match.
      this.drops += 1;
      this.position = Math.max(this.position ?? 0, params.resumeSince);
      client.close();
    }
  }

  #lost(client) {
    if (client !== this.#client || this.#closed) return;
    this.#client = null;
    if (!this.reconnect) {
      this.#fail(new ConnectionClosed(`the subscription ended; resume with since=${this.position}`));
      return;
    }
    this.#resume();
  }

  async #resume() {
    let delay = 100;
    while (!this.#closed) {
      try {
        await this.#subscribe();
        this.reconnects += 1;
        return;
      } catch (err) {
        if (!transient(err)) {
          this.#fail(err);
          return;
        }
        await sleep(delay);
        delay = Math.min(delay * 2, this.maxDelay);
      }
    }
  }

  #fail(err) {
    this.#error = err;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(err);
  }
}

/** A Subscription, subscribed: `for await (const event of await subscribe({ since: 0 })) ...`. */
export function subscribe({ socketPath = defaultSocketPath(), ...options } = {}) {
  return new Subscription(socketPath, options).open();
}

// The Node client against a real stpd: `STPD_SOCKET=... node --test clients/node/test/`.
// Tests/e2e/test_clients_node_go.py starts that stpd (--debug-methods, --max-outbound-bytes 65536)
// and runs this file; each test makes its own connections.

import assert from 'node:assert/strict';
import test from 'node:test';

import {
  Client, ConnectionClosed, InvalidParams, MethodNotFound, RpcError, SubscriptionNotFound, Subscription,
  defaultSocketPath, subscribe,
} from '../stpd.mjs';

const socketPath = process.env.STPD_SOCKET;
assert.ok(socketPath, 'STPD_SOCKET must name the socket of a stpd started with --debug-methods');

async function connected(fn) {
  const client = await Client.connect(socketPath);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

async function latestSeq(client) {
  return (await client.call('daemon.status')).store.latestSeq;
}

test('finds the socket as stpctl does', () => {
  const none = () => false;
  const all = () => true;
  assert.equal(defaultSocketPath({ STPD_SOCKET: '/x.sock', XDG_RUNTIME_DIR: '/r' }, 1000, all), '/x.sock');
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/r' }, 0, all), '/run/stpd/stpd.sock');
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/r' }, 1000, all), '/r/stpd.sock');
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/r' }, 1000, none), '/run/stpd/stpd.sock');
  assert.equal(defaultSocketPath({ STPD_SOCKET: '' }, 1000, none), '/run/stpd/stpd.sock');
});

test('ping', () => connected(async (client) => {
  const pong = await client.call('daemon.ping');
  assert.equal(pong.pong, true);
  assert.equal(typeof pong.version, 'string');
}));

test('pipelined calls are answered out of order, each to its own call', () => connected(async (client) => {
  const since = await latestSeq(client);
  const finished = [];
  // events.wait goes out first, and the daemon holds its reply until an event comes; the pings
  // sent after it on the same connection are all answered meanwhile.
  const waiting = client.call('events.wait', { since, timeout: 30 }).then((r) => { finished.push('wait'); return r; });
  const ping = () => client.call('daemon.ping').then((r) => { finished.push('ping'); return r; });
  const pings = Array.from({ length: 20 }, ping);
  const pongs = await Promise.all(pings);
  assert.ok(pongs.every((p) => p.pong === true));
  assert.deepEqual(finished, Array(20).fill('ping'), `events.wait finished before the pings: ${finished}`);
  await client.call('debug.emit', { count: 1 });
  const waited = await waiting;
  assert.deepEqual(waited.events.map((e) => e.seq), [since + 1]);
  assert.equal(waited.next, since + 1);
  // debug.emit results name their own seqs: concurrent calls never swap replies.
  const emitted = await Promise.all(Array.from({ length: 10 }, (_, n) => client.call('debug.emit', { count: n + 1 })));
  emitted.forEach((r, n) => assert.equal(r.lastSeq - r.firstSeq, n));
}));

test('an error reply is thrown as its code\'s class, with code, message and data', () => connected(async (client) => {
  await assert.rejects(client.call('events.unsubscribe', { subscription: 'sub_none' }), (err) => {
    assert.ok(err instanceof SubscriptionNotFound && err instanceof RpcError);
    assert.equal(err.code, 2002);
    assert.equal(err.name, 'SubscriptionNotFound');
    assert.equal(typeof err.message, 'string');
    return true;
  });
  await assert.rejects(client.call('events.wait', { since: 'zero' }), (err) => {
    assert.ok(err instanceof InvalidParams);
    assert.equal(err.code, -32602);
    assert.equal(err.data.parameter, 'since');
    return true;
  });
  await assert.rejects(client.call('no.such.method'), MethodNotFound);
  // The connection is still usable after errors.
  assert.equal((await client.call('daemon.ping')).pong, true);
}));

test('handle-url: no session matches a URL nobody waits for; a bad one is refused', () => connected(async (client) => {
  assert.deepEqual(await client.call('handle-url', { url: 'myshop://stripe-redirect?order=1' }),
    { handled: false, session: null });
  await assert.rejects(client.call('handle-url', { url: 'not a url' }), InvalidParams);
}));

test('a subscription replays, then follows live events', () => connected(async (client) => {
  const start = await latestSeq(client);
  await client.call('debug.emit', { count: 3, objectId: 'dbg_node_replay' });
  const events = await subscribe({ socketPath, since: start, filter: { objects: ['dbg_node_replay'] } });
  try {
    await client.call('debug.emit', { count: 2, objectId: 'dbg_node_replay' });
    await client.call('debug.emit', { count: 2, objectId: 'dbg_node_other' }); // filtered out
    const seqs = [];
    for (let i = 0; i < 5; i += 1) seqs.push((await events.next()).seq);
    assert.deepEqual(seqs, [start + 1, start + 2, start + 3, start + 4, start + 5]);
  } finally {
    events.close();
  }
}));

test('a subscription that reads too slowly is dropped, resumes, and loses nothing', () => connected(async (client) => {
  const subscriptions = async () => (await client.call('daemon.status')).subscriptions;
  // The earlier tests' subscriptions are gone (the daemon notices a close asynchronously).
  for (let tries = 0; (await subscriptions()) !== 0; tries += 1) {
    assert.ok(tries < 200, 'subscriptions of earlier tests are still open');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const start = await latestSeq(client);
  const events = new Subscription(socketPath, { since: start, highWaterMark: 8 });
  await events.open();
  try {
    // Batches of ~42 KB while the consumer takes none, until the daemon drops the subscription
    // (past the socket buffers and the 64 KiB budget); read at once after that, since the daemon
    // closes a dropped connection left unread for 30 s without flushing it.
    const blob = 'x'.repeat(4000);
    let last = start;
    while ((await subscriptions()) !== 0) {
      assert.ok(last - start < 1000, 'the daemon never dropped the stalled subscription');
      last = (await client.call('debug.emit', { count: 10, objectId: 'dbg_node_flood', payload: { blob } })).lastSeq;
    }
    const seqs = [];
    while (seqs.length < last - start) seqs.push((await events.next()).seq);
    assert.deepEqual(seqs, Array.from({ length: last - start }, (_, n) => start + n + 1));
    assert.equal(events.drops, 1);
    assert.equal(events.reconnects, 1);
    await client.call('debug.emit', { count: 1 });
    assert.equal((await events.next()).seq, last + 1);
  } finally {
    events.close();
  }
}));

test('a closed client rejects calls', async () => {
  const client = await Client.connect(socketPath);
  client.close();
  await assert.rejects(client.call('daemon.ping'), ConnectionClosed);
});

#!/usr/bin/env node
// A small program on the Node client (stpd.mjs): what an Electron or Node app does with stpd.
//
//   node example.mjs [--socket PATH] ping                  daemon.ping, and daemon.status pipelined with it
//   node example.mjs [--socket PATH] call METHOD [JSON]    any method; the result as JSON
//   node example.mjs [--socket PATH] handle-url URL        what a desktop URL handler does
//   node example.mjs [--socket PATH] watch [--since N] [--type T]... [--count N]
//                                                          events as JSON lines; resumes after
//                                                          events.dropped and daemon restarts
//
// Results go to stdout as JSON; an error reply goes to stderr as {"name","code","message","data"}
// with exit status 1; 3 when stpd cannot be reached. The socket defaults as stpctl's does.

import { Client, RpcError, defaultSocketPath, subscribe } from './stpd.mjs';

function parse(argv) {
  const options = { socket: defaultSocketPath(), since: null, types: [], count: Infinity, rest: [] };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--socket') options.socket = argv[++i];
    else if (arg === '--since') options.since = Number(argv[++i]);
    else if (arg === '--type') options.types.push(argv[++i]);
    else if (arg === '--count') options.count = Number(argv[++i]);
    else options.rest.push(arg);
  }
  return options;
}

const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function main() {
  const options = parse(process.argv.slice(2));
  const [command, ...args] = options.rest;
  if (command === 'watch') {
    const filter = options.types.length ? { types: options.types } : null;
    const events = await subscribe({ socketPath: options.socket, since: options.since, filter });
    let seen = 0;
    let resumed = events.drops + events.reconnects;
    for await (const event of events) {
      if (events.drops + events.reconnects !== resumed) {
        resumed = events.drops + events.reconnects;
        process.stderr.write(`resumed (drops ${events.drops}, reconnects ${events.reconnects})\n`);
      }
      print({ seq: event.seq, type: event.type, objectId: event.objectId });
      seen += 1;
      if (seen >= options.count) break;
    }
    events.close();
    return 0;
  }

  const client = await Client.connect(options.socket);
  try {
    if (command === 'ping') {
      // Two requests in flight at once on one connection; each reply finds its own call.
      const [pong, status] = await Promise.all([client.call('daemon.ping'), client.call('daemon.status')]);
      print(pong);
      print({ pid: status.pid, activation: status.activation });
    } else if (command === 'call') {
      print(await client.call(args[0], args[1] === undefined ? undefined : JSON.parse(args[1])));
    } else if (command === 'handle-url') {
      print(await client.call('handle-url', { url: args[0] }));
    } else {
      process.stderr.write('usage: example.mjs [--socket PATH] ping | call METHOD [JSON] | handle-url URL | watch\n');
      return 2;
    }
    return 0;
  } finally {
    client.close();
  }
}

main().then(
  (status) => { process.exitCode = status; },
  (err) => {
    if (err instanceof RpcError) {
      const { name, code, message, data } = err;
      process.stderr.write(`${JSON.stringify({ name, code, message, data })}\n`);
      process.exitCode = 1;
    } else if (['ENOENT', 'ECONNREFUSED', 'EACCES'].includes(err?.code)) {
      process.stderr.write(`cannot connect to stpd: ${err.message}\n`);
      process.exitCode = 3;
    } else {
      process.stderr.write(`${err?.stack ?? err}\n`);
      process.exitCode = 6;
    }
  },
);

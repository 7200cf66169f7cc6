// Preload for third-party test servers that call `listen(port)` with no host, which makes
// Node listen on every interface. Load it with `node --require <this file> ...` and every
// TCP listen() without an explicit host is bound to 127.0.0.1 instead. A listen() that
// names a host other than a loopback address is refused, so a test server can never be
// reached from outside this machine. Unix-socket and handle listens are left alone.
// Once a TCP server is listening, one line goes to stderr:
//   loopback-only: listening on 127.0.0.1:<port>
// so a test can start a server with PORT=0 and read the port the OS chose.
"use strict";
const net = require("node:net");

const LOOPBACK = "127.0.0.1";
const isLoopback = (h) => h === "localhost" || h === "::1" || /^127\./.test(h);
const isPort = (v) =>
  typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v));

const original = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") process.stderr.write(`loopback-only: listening on ${a.address}:${a.port}\n`);
  });
  const first = args[0];
  if (isPort(first) || first === undefined || typeof first === "function") {
    // listen([port[, host[, backlog]]][, callback])
    const port = isPort(first) ? Number(first) : 0;
    const tail = typeof first === "function" ? args : args.slice(1);
    if (typeof tail[0] === "string") {
      if (!isLoopback(tail[0])) throw new Error(`loopback-only: refusing to listen on ${tail[0]}`);
      return original.call(this, port, ...tail);
    }
    return original.call(this, port, LOOPBACK, ...tail);
  }
  if (first && typeof first === "object" && !("fd" in first) && !("_handle" in first) &&
      !("path" in first && first.path !== undefined) && !(first instanceof net.Server)) {
    // listen(options[, callback])
    const host = first.host;
    if (host !== undefined && !isLoopback(host)) throw new Error(`loopback-only: refusing to listen on ${host}`);
    return original.call(this, { ...first, host: host === undefined ? LOOPBACK : host }, ...args.slice(1));
  }
  return original.apply(this, args);
};

// The counting front (infra/local StartCountingFront): an HTTP proxy on
// 127.0.0.1 in front of one stand-in (dynalite) that counts each request
// and its bytes before forwarding it unchanged, so that a benchmark can
// compare what clients send on the wire. It runs in a process of its own,
// so its CPU is neither the client's nor the server's.
//
//   node countingfront.mjs HOST PORT TARGET_URL
//
// GET /__counts answers {"requests", "body_bytes", "header_bytes",
// "ops": {"<X-Amz-Target operation>": {"requests", "body_bytes"}}}, the
// totals since start; body_bytes are the request bodies' bytes (what
// Content-Length says), header_bytes the request lines and headers as sent.
import http from 'node:http';

const [host, port, target] = process.argv.slice(2);
const up = new URL(target);
const agent = new http.Agent({ keepAlive: true });
const counts = { requests: 0, body_bytes: 0, header_bytes: 0, ops: {} };

http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__counts') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(counts));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const op = String(req.headers['x-amz-target'] ?? '-').split('.').pop();
    let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`.length + 2;
    for (let i = 0; i < req.rawHeaders.length; i += 2) head += req.rawHeaders[i].length + 2 + req.rawHeaders[i + 1].length + 2;
    counts.requests++;
    counts.body_bytes += body.length;
    counts.header_bytes += head;
    const o = (counts.ops[op] ??= { requests: 0, body_bytes: 0 });
    o.requests++;
    o.body_bytes += body.length;
    const fwd = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers, agent }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    fwd.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
    fwd.end(body);
  });
}).listen(Number(port), host);

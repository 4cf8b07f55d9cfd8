// The connection table's eviction order, on a plain HTTP server whose handler holds its answers: an
// admission being answered is never the connection closed to make room while another can go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { ConnectionTable } from '../../webhook/server/connection-table';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withServer(
  maxConnections: number,
  body: (port: number, held: http.ServerResponse[], table: ConnectionTable) => Promise<void>,
  fairShareFloor?: number,
): Promise<void> {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    table.requestStarted(req, res);
    held.push(res); // answered only when the test says so: an admission in flight
  });
  const table = new ConnectionTable(server, { maxConnections, silentMs: 60_000, minBodyBytesPerSecond: 1024, fairShareFloor }, () => undefined, false);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body((server.address() as net.AddressInfo).port, held, table);
  } finally {
    table.stop();
    for (const res of held) if (!res.writableEnded) res.end();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

// `closed` is the stream's own: true once 'close' has been emitted.
type Client = net.Socket;
/** From `localAddress`: 127.0.0.1 stands for the apiserver, 127.0.0.2 for another pod. */
function connect(port: number, localAddress = '127.0.0.1'): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket: Client = net.connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.on('error', () => undefined);
    setTimeout(() => reject(new Error('connect timed out')), 5000).unref();
  });
}
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await sleep(50);
  assert.ok(check(), `timed out waiting for ${what}`);
}

test('at the cap, the oldest connection not being answered is closed, not the older one in flight', async () => {
  await withServer(3, async (port, held, table) => {
    const inFlight = await connect(port);
    inFlight.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the request to reach the handler', () => held.length === 1);
    const silentOld = await connect(port);
    const silentNew = await connect(port);
    await until('three connections in the table', () => table.size === 3);
    const newcomer = await connect(port);
    await until('a connection closed to make room', () => [inFlight, silentOld, silentNew, newcomer].some((socket) => socket.closed));
    await sleep(100);
    assert.deepEqual(
      { inFlight: !!inFlight.closed, silentOld: !!silentOld.closed, silentNew: !!silentNew.closed, newcomer: !!newcomer.closed },
      { inFlight: false, silentOld: true, silentNew: false, newcomer: false },
    );
    assert.equal(table.closed.evicted, 1);
    for (const socket of [inFlight, silentNew, newcomer]) socket.destroy();
  });
});

test('when every other connection is being answered, the oldest of them makes room: a new connection always gets in', async () => {
  await withServer(2, async (port, held, table) => {
    const first = await connect(port);
    first.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the first request', () => held.length === 1);
    const second = await connect(port);
    second.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the second request', () => held.length === 2);
    const newcomer = await connect(port);
    await until('a connection closed to make room', () => !!first.closed || !!second.closed || !!newcomer.closed);
    await sleep(100);
    assert.deepEqual({ first: !!first.closed, second: !!second.closed, newcomer: !!newcomer.closed }, { first: true, second: false, newcomer: false });
    assert.equal(table.size, 2);
    for (const socket of [second, newcomer]) socket.destroy();
  });
});

test('at the cap, a new connection from the source holding the most is closed at accept, and a light source gets in at its expense', async () => {
  await withServer(
    4,
    async (port, held, table) => {
      const apiserver = await connect(port, '127.0.0.1');
      apiserver.write('GET /admission HTTP/1.1\r\nHost: x\r\n\r\n');
      await until('the admission to reach the handler', () => held.length === 1);
      const pod = [await connect(port, '127.0.0.2'), await connect(port, '127.0.0.2'), await connect(port, '127.0.0.2')];
      await until('four connections in the table', () => table.size === 4);
      // The pod's source holds 3 of 4, over its share (4 / 2 sources): its fourth is closed before a
      // byte is read (on the TLS port: before the handshake), and none of its others is.
      const podNewcomer = await connect(port, '127.0.0.2');
      await until('the pod\'s new connection closed', () => !!podNewcomer.closed);
      await sleep(100);
      const open = () => ({ apiserver: !apiserver.closed, pod: pod.map((socket) => !socket.closed) });
      assert.deepEqual(open(), { apiserver: true, pod: [true, true, true] }, 'connections open after the pod\'s fourth');
      assert.deepEqual({ ...table.closed, from127_0_0_2: table.connectionsFrom('127.0.0.2') }, { evicted: 0, over_share: 1, silent: 0, slow_body: 0, from127_0_0_2: 3 });
      // The apiserver's new connection gets in: the pod's oldest silent connection makes room, never
      // the apiserver's admission in flight (older than every one of the pod's).
      const apiserverNewcomer = await connect(port, '127.0.0.1');
      await until('a connection closed to make room', () => pod.some((socket) => !!socket.closed) || !!apiserver.closed || !!apiserverNewcomer.closed);
      await sleep(100);
      assert.deepEqual(
        { ...open(), apiserverNewcomer: !apiserverNewcomer.closed },
        { apiserver: true, pod: [false, true, true], apiserverNewcomer: true },
        'connections open after the apiserver\'s second',
      );
      assert.deepEqual({ evicted: table.closed.evicted, over_share: table.closed.over_share, size: table.size }, { evicted: 1, over_share: 1, size: 4 });
      for (const socket of [apiserver, apiserverNewcomer, ...pod]) socket.destroy();
      await until('every connection forgotten, its source with it', () => table.size === 0 && table.connectionsFrom('127.0.0.1') + table.connectionsFrom('127.0.0.2') === 0);
    },
    1,
  );
});

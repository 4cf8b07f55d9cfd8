// The connection table's choices, on a plain HTTP server whose handler holds its answers (an admission
// in flight until the test answers it): which connection makes room at the cap, the fair share by
// source address, a source over its share displacing its own connections, and what shutdown closes.
// The table decides synchronously when a connection is accepted, so each check reads the server's own
// side of every connection (destroyed or not) once the server has accepted the newcomer: nothing waits
// on a timer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ConnectionLimits, ConnectionTable } from '../../webhook/server/connection-table';

/** Long enough for anything on a loaded machine; every wait ends on an event well before. */
const WAIT_MS = 20_000;

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = performance.now() + WAIT_MS;
  while (!check()) {
    if (performance.now() > deadline) assert.fail(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// `closed` is the stream's own: true once 'close' has been emitted.
type Client = net.Socket;

interface Harness {
  readonly port: number;
  /** Requests the handler holds, in the order they arrived: answered when the test says so. */
  readonly held: http.ServerResponse[];
  readonly table: ConnectionTable;
  /** Connects from `localAddress` (127.0.0.1 stands for the apiserver, 127.0.0.2 for another pod) and
   * resolves once the server has accepted the connection, and so the table has decided about it. */
  connect(localAddress?: string): Promise<Client>;
  /** The server's side of `client`. */
  serverSide(client: Client): net.Socket;
  /** Whether the server's side of `client` is still open. */
  open(client: Client): boolean;
}

async function withServer(maxConnections: number, body: (harness: Harness) => Promise<void>, limits: Partial<ConnectionLimits> = {}): Promise<void> {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    table.requestStarted(req, res);
    held.push(res);
  });
  const table = new ConnectionTable(server, { maxConnections, silentMs: 60_000, minBodyBytesPerSecond: 1024, ...limits }, () => undefined, false);
  // After the table's own listener: by then it has decided about the connection.
  const accepted = new Map<number, net.Socket>();
  server.on('connection', (raw: net.Socket) => accepted.set(raw.remotePort!, raw));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  /** Each client's local port, which a socket forgets once closed. */
  const clients = new Map<Client, number>();
  const harness: Harness = {
    port,
    held,
    table,
    async connect(localAddress = '127.0.0.1') {
      const client = await new Promise<Client>((resolve, reject) => {
        const socket: Client = net.connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
        socket.on('error', () => undefined);
        socket.once('close', () => reject(new Error('closed before connecting')));
      });
      const localPort = client.localPort!;
      clients.set(client, localPort);
      await until(`the server to accept the connection from port ${localPort}`, () => accepted.has(localPort));
      return client;
    },
    serverSide(client) {
      const raw = accepted.get(clients.get(client)!);
      assert.ok(raw, `the server never accepted the connection from port ${clients.get(client)}`);
      return raw;
    },
    open(client) {
      return !harness.serverSide(client).destroyed;
    },
  };
  try {
    await body(harness);
  } finally {
    table.stop();
    for (const res of held) if (!res.writableEnded) res.end();
    for (const client of clients.keys()) client.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** Sends a whole request and waits until the handler holds it (an admission in flight). */
async function request(harness: Harness, client: Client, path = '/admission'): Promise<http.ServerResponse> {
  const before = harness.held.length;
  client.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await until(`the request for ${path} to reach the handler`, () => harness.held.length === before + 1);
  return harness.held[before];
}

/** A connection that has carried a request and has its answer: idle, as a keep-alive connection in a pool. */
async function idleConnection(harness: Harness, localAddress = '127.0.0.1'): Promise<Client> {
  const client = await harness.connect(localAddress);
  const res = await request(harness, client, '/answered');
  await new Promise<void>((resolve) => res.end('ok', () => resolve()));
  return client;
}

/** A connection that has sent part of a request line: slow, its headers still arriving. */
async function slowConnection(harness: Harness, localAddress = '127.0.0.1'): Promise<Client> {
  const client = await harness.connect(localAddress);
  client.write('GET /sl');
  await until('the partial request to be read', () => harness.serverSide(client).bytesRead > 0);
  return client;
}

test('at the cap, the oldest connection not being answered is closed, not the older one in flight', async () => {
  await withServer(3, async (harness) => {
    const inFlight = await harness.connect();
    await request(harness, inFlight, '/slow');
    const silentOld = await harness.connect();
    const silentNew = await harness.connect();
    const newcomer = await harness.connect();
    assert.deepEqual(
      { inFlight: harness.open(inFlight), silentOld: harness.open(silentOld), silentNew: harness.open(silentNew), newcomer: harness.open(newcomer) },
      { inFlight: true, silentOld: false, silentNew: true, newcomer: true },
      'connections open on the server after the fourth',
    );
    assert.equal(harness.table.closed.evicted, 1);
  });
});

test('when every other connection is being answered, the oldest of them makes room: a new connection always gets in', async () => {
  await withServer(2, async (harness) => {
    const first = await harness.connect();
    await request(harness, first, '/a');
    const second = await harness.connect();
    await request(harness, second, '/b');
    const newcomer = await harness.connect();
    assert.deepEqual(
      { first: harness.open(first), second: harness.open(second), newcomer: harness.open(newcomer) },
      { first: false, second: true, newcomer: true },
      'connections open on the server after the third',
    );
    assert.equal(harness.table.size, 2);
  });
});

test('at the cap, a new connection from the source holding the most is closed at accept, and a light source gets in at its expense', async () => {
  await withServer(
    4,
    async (harness) => {
      const apiserver = await harness.connect('127.0.0.1');
      await request(harness, apiserver);
      const pod = [await harness.connect('127.0.0.2'), await harness.connect('127.0.0.2'), await harness.connect('127.0.0.2')];
      // The pod's source holds 3 of 4, over its share (4 / 2 sources), and may displace none of its
      // own (no displacements configured): its fourth is closed at accept (on the TLS port: before
      // the handshake), and none of its others is.
      const podNewcomer = await harness.connect('127.0.0.2');
      const open = () => ({ apiserver: harness.open(apiserver), pod: pod.map((socket) => harness.open(socket)) });
      assert.deepEqual({ ...open(), podNewcomer: harness.open(podNewcomer) }, { apiserver: true, pod: [true, true, true], podNewcomer: false }, "connections open after the pod's fourth");
      assert.deepEqual(
        { ...harness.table.closed, from127_0_0_2: harness.table.connectionsFrom('127.0.0.2') },
        { evicted: 0, displaced: 0, over_share: 1, silent: 0, slow_body: 0, reset_flood: 0, from127_0_0_2: 3 },
      );
      // The apiserver's new connection gets in: the pod's oldest silent connection makes room, never
      // the apiserver's admission in flight (older than every one of the pod's).
      const apiserverNewcomer = await harness.connect('127.0.0.1');
      assert.deepEqual(
        { ...open(), apiserverNewcomer: harness.open(apiserverNewcomer) },
        { apiserver: true, pod: [false, true, true], apiserverNewcomer: true },
        "connections open after the apiserver's second",
      );
      assert.deepEqual({ evicted: harness.table.closed.evicted, over_share: harness.table.closed.over_share, size: harness.table.size }, { evicted: 1, over_share: 1, size: 4 });
      for (const socket of [apiserver, apiserverNewcomer, ...pod]) socket.destroy();
      await until('every connection forgotten, its source with it', () => harness.table.size === 0 && harness.table.connectionsFrom('127.0.0.1') + harness.table.connectionsFrom('127.0.0.2') === 0);
    },
    { fairShareFloor: 1 },
  );
});

test("a new connection from a source over its share takes the place of that source's own worst connection: silent, then slow, then idle, never one being answered", async () => {
  // One address for the apiserver and an attacker beside it (a hostNetwork pod): its connections in
  // flight and idle are the apiserver's, the silent and slow ones the attacker's. Another pod holds one.
  await withServer(
    6,
    async (harness) => {
      const inFlight = await harness.connect();
      await request(harness, inFlight);
      const idle = await idleConnection(harness);
      const slow = await slowConnection(harness);
      const silentOld = await harness.connect();
      const silentNew = await harness.connect();
      const pod = await harness.connect('127.0.0.2');
      const shared = { inFlight, idle, slow, silentOld, silentNew };
      const openShared = () => Object.fromEntries(Object.entries(shared).map(([name, client]) => [name, harness.open(client)]));
      // Each newcomer is the apiserver's: it sends its admission at once, and is then being answered.
      const newcomers: Client[] = [];
      const expected = [
        { inFlight: true, idle: true, slow: true, silentOld: false, silentNew: true },
        { inFlight: true, idle: true, slow: true, silentOld: false, silentNew: false },
        { inFlight: true, idle: true, slow: false, silentOld: false, silentNew: false },
        { inFlight: true, idle: false, slow: false, silentOld: false, silentNew: false },
      ];
      for (const [i, after] of expected.entries()) {
        const newcomer = await harness.connect();
        assert.deepEqual(openShared(), after, `the shared address's connections open after its newcomer ${i + 1}`);
        assert.ok(harness.open(newcomer), `newcomer ${i + 1} got in`);
        await request(harness, newcomer);
        newcomers.push(newcomer);
      }
      // Every connection of the address is being answered now: the next newcomer is closed at accept.
      const refused = await harness.connect();
      assert.equal(harness.open(refused), false, 'a newcomer when every connection of its source is being answered');
      assert.ok(harness.open(inFlight) && newcomers.every((client) => harness.open(client)), 'no admission in flight was closed');
      assert.ok(harness.open(pod), "the other pod's connection is never one of them");
      assert.deepEqual(
        { displaced: harness.table.closed.displaced, over_share: harness.table.closed.over_share, evicted: harness.table.closed.evicted },
        { displaced: 4, over_share: 1, evicted: 0 },
      );
    },
    { fairShareFloor: 1, displacements: { perSecond: 0.001, burst: 10 } },
  );
});

test('a source that only reconnects displaces its own connections at most its burst at once and its rate a second after; past that it is closed at accept', async () => {
  const burst = 3;
  const perSecond = 2;
  await withServer(
    4,
    async (harness) => {
      for (let i = 0; i < 4; i++) await harness.connect('127.0.0.2');
      // Newcomers stay, silent, as the attacker's do: each either takes an older one's place or is closed.
      const started = performance.now();
      const tries = 20;
      for (let i = 0; i < tries; i++) await harness.connect('127.0.0.2');
      const seconds = (performance.now() - started) / 1000;
      const { displaced, over_share } = harness.table.closed;
      // The server's bucket refills on the same clock, between these two readings.
      const most = burst + Math.floor(perSecond * seconds);
      assert.ok(displaced >= burst && displaced <= most, `displaced ${displaced} in ${seconds.toFixed(2)} s: expected the burst of ${burst} and at most ${most}`);
      assert.equal(displaced + over_share, tries, 'every newcomer past the cap either displaced one or was closed at accept');
      assert.equal(harness.table.connectionsFrom('127.0.0.2'), 4, 'the source still holds the cap, no more');
      // Its bucket refills: a later newcomer displaces one again.
      const before = harness.table.closed.displaced;
      const deadline = performance.now() + WAIT_MS;
      while (harness.table.closed.displaced === before) {
        assert.ok(performance.now() < deadline, `no newcomer displaced one in ${WAIT_MS} ms at ${perSecond} a second`);
        await harness.connect('127.0.0.2');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    { fairShareFloor: 1, displacements: { perSecond, burst } },
  );
});

test('shutdown closes every connection with no request in flight at once, and one in flight after its answer, which says Connection: close', async () => {
  await withServer(10, async (harness) => {
    const inFlight = await harness.connect();
    const inFlightRes = await request(harness, inFlight);
    const headWritten = await harness.connect();
    const headWrittenRes = await request(harness, headWritten);
    headWrittenRes.writeHead(200, { 'Content-Length': 4 });
    headWrittenRes.write('ab');
    const idle = await idleConnection(harness);
    const slow = await slowConnection(harness);
    const silent = await harness.connect();

    assert.deepEqual(harness.table.closeIdle(), { closed: 3, inFlight: 2 }, 'closed at once and left in flight');
    assert.deepEqual(
      { inFlight: harness.open(inFlight), headWritten: harness.open(headWritten), idle: harness.open(idle), slow: harness.open(slow), silent: harness.open(silent) },
      { inFlight: true, headWritten: true, idle: false, slow: false, silent: false },
      'connections open on the server right after',
    );

    const received = (client: Client) => {
      let text = '';
      client.setEncoding('latin1');
      client.on('data', (chunk: string) => (text += chunk));
      return new Promise<string>((resolve) => client.once('close', () => resolve(text)));
    };
    const inFlightText = received(inFlight);
    const headWrittenText = received(headWritten);
    inFlightRes.end('done');
    headWrittenRes.end('cd');
    const [answer, written] = await Promise.all([inFlightText, headWrittenText]);
    assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/, 'the answer in flight is written');
    assert.match(answer, /\r\nConnection: close\r\n/i, 'and says the connection closes');
    assert.ok(answer.endsWith('\r\n\r\ndone'), `the whole answer arrived before the close: ${JSON.stringify(answer)}`);
    assert.ok(written.endsWith('\r\n\r\nabcd'), `an answer whose head was out already is written whole, then closed: ${JSON.stringify(written)}`);
    await until('the table to be empty', () => harness.table.size === 0);
  });
});

import { readFileSync } from 'node:fs';
import { connect, createServer, Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { drawnLately, FREE_PORTS_ENV, freeRange, LOOPBACK, listen, portDraw } from '../core/http.ts';
import { freePort, portIsFree, reservePorts } from './ports.ts';

describe('reservePorts', () => {
  it('holds each chosen port until it is released by name, resetting connections meanwhile', async () => {
    const { ports, release } = await reservePorts({ a: 0, b: 0 }, 'free');
    expect(ports.a).not.toBe(ports.b);
    // Held: no one else can listen on it (a listen(0) elsewhere is never handed it).
    expect(await portIsFree(ports.a as number)).toBe(false);
    // A client that connects meanwhile is refused at once instead of waiting for a server.
    const reset = await new Promise<string>((resolve) => {
      const socket = connect(ports.a as number, LOOPBACK);
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      socket.on('close', () => resolve('closed'));
    });
    expect(['ECONNRESET', 'closed']).toContain(reset);
    await release(['a']);
    const server = createServer();
    expect(await listen(server, ports.a as number)).toBe(ports.a);
    server.close();
    expect(await portIsFree(ports.b as number)).toBe(false);
    await release(['b', 'b']);
    expect(await portIsFree(ports.b as number)).toBe(true);
  });

  it('names a port this user may not listen on as such, not as one in use, holding none', async () => {
    // Root may listen anywhere: the kernel's refusal to others (ports below 1024) is played by listen.
    const listen = Server.prototype.listen;
    const refused = vi.spyOn(Server.prototype, 'listen').mockImplementation(function (this: Server, ...args) {
      if (args[0] !== 80) return listen.apply(this, args as Parameters<Server['listen']>);
      const error = Object.assign(new Error('listen EACCES: permission denied 127.0.0.1:80'), {
        code: 'EACCES',
      });
      process.nextTick(() => this.emit('error', error));
      return this;
    });
    const first = await freePort();
    try {
      await expect(reservePorts({ control: first, gateway: 80 }, 'default')).rejects.toThrow(
        'port 80 for gateway is not open to this user (EACCES; on Linux, ports below 1024 need privileges); choose other ports (--port-base, --gateway-port)',
      );
    } finally {
      refused.mockRestore();
    }
    expect(await portIsFree(first)).toBe(true);
  });

  it("names both components given one port (--blob-port on the Functions host's), holding none", async () => {
    const [control, functions] = [await freePort(), await freePort()];
    await expect(
      reservePorts({ control, blob: 10000, functions }, 'default', { blob: functions }),
    ).rejects.toThrow(
      `port ${functions} is given to both blob and functions; choose other ports (--port-base, --blob-port, --functions-port)`,
    );
    expect([await portIsFree(control), await portIsFree(functions)]).toEqual([true, true]);
  });

  it('refuses a base that leaves too few ports below 65536, holding none', async () => {
    await expect(reservePorts({ a: 7070, b: 10000, c: 8081 }, { base: 65534 })).rejects.toThrow(
      'port base 65534 is too high: the stack needs 3 ports from it; choose at most 65533 (--port-base)',
    );
    expect(await portIsFree(65534)).toBe(true);
  });
});

describe('free ports', () => {
  // Linux's range for outgoing connections and listen(0): a stopped component's port in it could be
  // given to any client socket meanwhile, and the component could not listen on it again.
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  // The range in force: the default, or the test worker's own (emulators/core/test-setup.ts).
  const draw = (port: number) => {
    const [from, to] = freeRange();
    return (port - from + 0.5) / (to - from);
  };

  it('are drawn below the ephemeral range, each another', async () => {
    const { ports, release } = await reservePorts({ a: 0, b: 0, c: 7070 }, 'free');
    await release(['a', 'b', 'c']);
    const drawn = [ports.a, ports.b, ports.c, await freePort(), await freePort()] as number[];
    for (const port of drawn) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(low);
    }
    expect(new Set(drawn).size).toBe(drawn.length);
  });

  /**
   * The port freePort gives when its first draw lands on `port`, and how many draws it took. Not one:
   * a redraw may itself land on a port this (shared) test process drew lately.
   */
  async function drawnPast(port: number) {
    const random = vi.spyOn(portDraw, 'random').mockReturnValueOnce(draw(port));
    try {
      return { next: await freePort(), draws: random.mock.calls.length };
    } finally {
      random.mockRestore();
    }
  }

  it("never land on a port the user gave another component (a stopped stack's, given again)", async () => {
    const [from, to] = freeRange();
    let given = 0;
    while (!given || drawnLately(given) || !(await portIsFree(given)))
      given = from + Math.floor(Math.random() * (to - from));
    // The first draw, control's, lands on the port given to identity, which comes after it.
    const random = vi.spyOn(portDraw, 'random').mockReturnValueOnce(draw(given));
    try {
      const { ports, release } = await reservePorts({ control: 0, identity: 0 }, 'free', { identity: given });
      await release(['control', 'identity']);
      expect(Object.keys(ports)).toEqual(['control', 'identity']);
      expect(ports.identity).toBe(given);
      expect(ports.control).not.toBe(given);
    } finally {
      random.mockRestore();
    }
  });

  it('draw again when the port drawn is taken', async () => {
    const taken = createServer();
    const port = await listen(taken, await freePort());
    try {
      const { next, draws } = await drawnPast(port);
      expect(draws).toBeGreaterThanOrEqual(2);
      expect(next).not.toBe(port);
    } finally {
      taken.close();
    }
  });

  it('does not draw again a port this process drew lately and let go: another process may be about to listen on it', async () => {
    // As a test's freePort for a web app it starts after a stack: the stack's draws must not take it.
    const handedOver = await freePort();
    const { next, draws } = await drawnPast(handedOver);
    expect(draws).toBeGreaterThanOrEqual(2);
    expect(next).not.toBe(handedOver);
  });

  describe('TASKSTACK_FREE_PORTS', () => {
    const before = process.env[FREE_PORTS_ENV];
    afterEach(() => {
      if (before === undefined) delete process.env[FREE_PORTS_ENV];
      else process.env[FREE_PORTS_ENV] = before;
    });

    it('narrows the draws to its range, both ends included', async () => {
      process.env[FREE_PORTS_ENV] = '31000-31149';
      expect(freeRange()).toEqual([31_000, 31_150]);
      const { ports, release } = await reservePorts({ a: 0, b: 0, c: 0 }, 'free');
      await release(['a', 'b', 'c']);
      for (const port of [ports.a, ports.b, ports.c, await freePort()] as number[]) {
        expect(port).toBeGreaterThanOrEqual(31_000);
        expect(port).toBeLessThanOrEqual(31_149);
      }
    });

    it.each([
      '31000',
      '31149-31000',
      '80-2000',
      '31000-31050',
      '31000-70000',
    ])('refuses %s, naming the setting and what it takes', async (setting) => {
      process.env[FREE_PORTS_ENV] = setting;
      await expect(freePort()).rejects.toThrow(
        `TASKSTACK_FREE_PORTS=${setting}: give LOW-HIGH, at least 100 ports within 1024-65535`,
      );
    });
  });
});

import { connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { LOOPBACK, listen } from '../core/http.ts';
import { portIsFree, reservePorts } from './ports.ts';

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
});

/** Loopback networking helpers for end-to-end tests. */
import net from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1 (the OS picks it: listen on port 0). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

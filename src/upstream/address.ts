/**
 * The SSRF address decision: may the platform open a connection to this IP address?
 *
 * Only globally routable unicast addresses are admitted. Refused: the IANA special-purpose
 * ranges (RFC 6890 and its IPv4/IPv6 registries) — private (RFC 1918, fc00::/7), loopback,
 * link-local (incl. the cloud metadata address 169.254.169.254), CGNAT (RFC 6598), multicast,
 * unspecified, documentation, benchmarking, reserved, and IPv6 forms that embed an IPv4 address
 * (IPv4-mapped/compatible, NAT64, 6to4, Teredo) unless the embedded address itself is public.
 * Loopback (127.0.0.0/8, ::1, ::ffff:127.x) is admitted only when `allowLoopback` is set.
 */
import { isIP, BlockList } from 'node:net';

/** Why an address was refused, or `public`/`loopback` when it may be admitted. */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'reserved'
  | 'invalid';

const V4: Array<[string, number, AddressClass]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V6: Array<[string, number, AddressClass]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['100::', 64, 'reserved'], // discard-only
  ['2001::', 23, 'reserved'], // IETF protocol assignments (incl. Teredo 2001::/32)
  ['2001:db8::', 32, 'reserved'], // documentation
  ['2002::', 16, 'reserved'], // 6to4 (embeds an IPv4 address)
  ['64:ff9b::', 96, 'reserved'], // NAT64 (embeds an IPv4 address)
  ['64:ff9b:1::', 48, 'reserved'],
  ['fc00::', 7, 'private'], // unique local (incl. fd00::/8)
  ['fe80::', 10, 'link_local'],
  ['fec0::', 10, 'private'], // deprecated site-local
  ['ff00::', 8, 'multicast'],
];

const lists = new Map<AddressClass, BlockList>();
for (const [net, prefix, cls] of V4) {
  if (!lists.has(cls)) lists.set(cls, new BlockList());
  lists.get(cls)!.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix, cls] of V6) {
  if (!lists.has(cls)) lists.set(cls, new BlockList());
  lists.get(cls)!.addSubnet(net, prefix, 'ipv6');
}

/** Expand an IPv6 address into its 8 16-bit groups (handles `::` and a trailing dotted quad). */
function ipv6Groups(ip: string): number[] {
  let s = ip.split('%')[0].toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const b = dotted[1].split('.').map(Number);
    s = `${s.slice(0, -dotted[1].length)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : new Array(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => parseInt(g || '0', 16));
}

/** The IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) IPv6 address. */
function embeddedIpv4(ip: string): string | null {
  const g = ipv6Groups(ip);
  if (g.slice(0, 5).some((x) => x !== 0)) return null;
  if (g[5] !== 0xffff && g[5] !== 0) return null;
  if (g[5] === 0 && g[6] === 0) return null; // :: and ::1 are not IPv4-compatible forms
  return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
}

/** Classify an IP address literal (no DNS). Non-IP input → `invalid`. */
export function classifyAddress(ip: string): AddressClass {
  let cls = classified.get(ip);
  if (cls === undefined) {
    cls = classifyUncached(ip);
    if (classified.size >= MAX_CLASSIFIED) classified.clear();
    classified.set(ip, cls);
  }
  return cls;
}

/** Memo of {@link classifyAddress} (a pure function of the string; BlockList checks are costly per call). */
const classified = new Map<string, AddressClass>();
const MAX_CLASSIFIED = 4096;

function classifyUncached(ip: string): AddressClass {
  const raw = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(raw.split('%')[0]);
  if (family === 0) return 'invalid';
  if (family === 6) {
    const v4 = embeddedIpv4(raw);
    if (v4) return classifyUncached(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const addr = raw.split('%')[0];
  for (const [cls, list] of lists) if (list.check(addr, type)) return cls;
  return 'public';
}

/** True when a connection to `ip` is allowed: public addresses, and loopback only when `allowLoopback`. */
export function isAddressAllowed(ip: string, allowLoopback: boolean): boolean {
  const cls = classifyAddress(ip);
  return cls === 'public' || (cls === 'loopback' && allowLoopback);
}

/**
 * Why the URL `raw` can never be reached, decided before any DNS lookup: its host is an IP literal
 * (in any spelling the WHATWG URL parser normalises, e.g. `0x7f000001`) that {@link isAddressAllowed}
 * refuses. @returns the address class (`private`, `loopback`…), or null when the URL does not parse,
 * names a host (checked after DNS at connect time) or is an admitted literal.
 */
export function refusedLiteralTarget(raw: string, allowLoopback: boolean): AddressClass | null {
  let host: string;
  try {
    host = new URL(raw).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null;
  }
  return isIP(host) && !isAddressAllowed(host, allowLoopback) ? classifyAddress(host) : null;
}

/** True for a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.y.z). */
export function isLoopbackAddress(ip: string): boolean {
  return classifyAddress(ip) === 'loopback';
}

import http from 'node:http'
import https from 'node:https'
import dns from 'node:dns/promises'
import net from 'node:net'

// One outgoing webhook call. The target's name is resolved once per attempt, every address is
// checked against the blocked ranges (unless private networks are allowed), and the connection is
// pinned to the checked address, so a DNS answer cannot change between the check and the connect.
// Redirects are never followed. The response body is kept up to 64 KiB.

export const RESPONSE_BODY_LIMIT = 64 * 1024

const BLOCKED_V4 = [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const

/** The 6to4 prefix 2002:wwxx:yyzz::/(16 + bits) of an IPv4 subnet. */
function sixToFour (v4: string, bits: number): [string, number] {
  const [a, b, c, d] = v4.split('.').map(Number)
  return [`2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::`, 16 + bits]
}

// BlockList judges an IPv4-mapped address (::ffff:0:0/96) by the IPv4 rules itself. NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed, so each blocked IPv4
// subnet is blocked inside them too; IPv4-compatible ::/96 (deprecated; :: and ::1 among it) and
// the local-use NAT64 prefix 64:ff9b:1::/48 are blocked whole.
const BLOCKED = new net.BlockList()
for (const [a, p] of BLOCKED_V4) {
  BLOCKED.addSubnet(a, p, 'ipv4')
  BLOCKED.addSubnet(`64:ff9b::${a}`, 96 + p, 'ipv6')
  BLOCKED.addSubnet(...sixToFour(a, p), 'ipv6')
}
for (const [a, p] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b:1::', 48], ['2001:db8::', 32]] as const) BLOCKED.addSubnet(a, p, 'ipv6')

/** Loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved addresses, also embedded in IPv6. */
export function isBlockedAddress (address: string): boolean {
  return BLOCKED.check(address, net.isIPv4(address) ? 'ipv4' : 'ipv6')
}

/** The IP address a URL's hostname names literally (IPv6 without brackets), or null for a name. */
export function literalAddress (hostname: string): string | null {
  const bare = hostname.replace(/^\[|\]$/g, '')
  return net.isIP(bare) === 0 ? null : bare
}

/** What a blocked address is, and the fix. */
export const BLOCKED_ADDRESS = 'a loopback, private, link-local or metadata address (set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow)'

const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token)$|secret|token|password/i

export function redactHeaders (headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, SECRET_HEADER.test(k) ? '[redacted]' : v]))
}

// Query parameters that carry credentials by name (`?token=`, `?api_key=`, `?sig=`, `?X-Amz-Signature=`).
const SECRET_PARAM = /secret|token|passw|key|sig|auth|credential|session/i

/** The URL as a run records it: the password of its user part and credential-named query values redacted. */
export function redactUrl (raw: string): string {
  let url: URL
  try { url = new URL(raw) } catch { return raw }
  let changed = false
  if (url.password !== '') { url.password = 'redacted'; changed = true }
  for (const k of new Set(url.searchParams.keys())) {
    if (SECRET_PARAM.test(k)) { url.searchParams.set(k, '[redacted]'); changed = true }
  }
  return changed ? url.toString() : raw
}

export interface OutgoingCall { url: string, method: string, headers: Record<string, string>, body: Buffer | null }
export type CallResult =
  | { kind: 'response', status: number, headers: Record<string, string>, body: string, truncated: boolean, address: string }
  | { kind: 'refused', reason: string, address?: string }
  | { kind: 'error', reason: string, timedOut: boolean, address?: string }

async function resolveChecked (host: string, allowPrivate: boolean): Promise<{ address: string, family: number } | { refused: string }> {
  const literal = literalAddress(host)
  const found = literal !== null
    ? [{ address: literal, family: net.isIP(literal) }]
    : await dns.lookup(host, { all: true, verbatim: true })
  if (found.length === 0) return { refused: `${host} has no address` }
  if (!allowPrivate) {
    const blocked = found.find(a => isBlockedAddress(a.address))
    if (blocked) return { refused: `${host} resolves to ${blocked.address}, ${BLOCKED_ADDRESS}` }
  }
  return found[0]
}

export async function callOnce (call: OutgoingCall, opts: { allowPrivate: boolean, timeoutMs: number }): Promise<CallResult> {
  const url = new URL(call.url)
  let target: { address: string, family: number } | { refused: string }
  try { target = await resolveChecked(url.hostname, opts.allowPrivate) } catch (err) {
    return { kind: 'error', reason: `cannot resolve ${url.hostname}: ${(err as Error).message}`, timedOut: false }
  }
  if ('refused' in target) return { kind: 'refused', reason: target.refused }
  const pinned = target
  const lib = url.protocol === 'https:' ? https : http
  return new Promise<CallResult>(resolve => {
    const req = lib.request(url, {
      method: call.method,
      headers: { ...call.headers, ...(call.body ? { 'content-length': String(call.body.length) } : {}) },
      // Connect to the address that was checked, whatever the name resolves to now.
      lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) => o?.all ? cb(null, [pinned]) : cb(null, pinned.address, pinned.family)) as unknown as net.LookupFunction,
      timeout: opts.timeoutMs
    }, res => {
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      res.on('data', (c: Buffer) => {
        if (size < RESPONSE_BODY_LIMIT) chunks.push(c.subarray(0, RESPONSE_BODY_LIMIT - size))
        size += c.length
        if (size > RESPONSE_BODY_LIMIT && !truncated) { truncated = true; res.destroy() }
      })
      const done = () => {
        clearTimeout(deadline)
        const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]))
        resolve({ kind: 'response', status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8'), truncated, address: pinned.address })
      }
      res.on('end', done)
      res.on('close', done)
    })
    // The whole attempt is bounded, not only idle time between packets.
    const deadline = setTimeout(() => req.destroy(new TimeoutError(opts.timeoutMs)), opts.timeoutMs)
    req.on('timeout', () => req.destroy(new TimeoutError(opts.timeoutMs)))
    req.on('error', err => {
      clearTimeout(deadline)
      resolve({ kind: 'error', reason: err.message, timedOut: err instanceof TimeoutError, address: pinned.address })
    })
    req.end(call.body ?? undefined)
  })
}

class TimeoutError extends Error {
  constructor (ms: number) { super(`no complete answer within ${ms} ms`) }
}

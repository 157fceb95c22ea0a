import { createHash, createPrivateKey, createPublicKey, hkdfSync, sign, type KeyObject } from 'node:crypto'
import type { Config } from '../config.js'

// Signed tree heads. Ed25519 (node:crypto), so that anyone holding the public key can check a head
// and only the service can make one. The key is AUDIT_SIGNING_KEY when set; otherwise it is derived
// (HKDF-SHA256) from AUTH_JWT_SECRET, so every API and worker process of an installation signs with
// the same key without new configuration. The derived key is only as secret as AUTH_JWT_SECRET:
// installations that hand tree heads to outside auditors should set a key of its own.

export const TREE_HEAD_CONTEXT = 'audit-tree-head-v1'

export interface TreeSigner {
  /** SHA-256 (hex) of the public key's SPKI DER. */
  keyId: string
  /** SPKI PEM: what a verifier pins. */
  publicKey: string
  sign: (message: Buffer) => Buffer
}

// PKCS#8 DER of an Ed25519 private key is this fixed prefix followed by the 32-byte seed (RFC 8410).
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

function privateKeyOf (config: Pick<Config, 'auditSigningKey' | 'auth'>): KeyObject {
  if (config.auditSigningKey !== null) return createPrivateKey(config.auditSigningKey)
  const seed = Buffer.from(hkdfSync('sha256', config.auth.jwtSecret, 'spatial-audit', 'audit tree head signing key v1', 32))
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
}

const signers = new Map<string, TreeSigner>()

/** The signer for a configuration (memoized per key material: key derivation is not free). */
export function treeSigner (config: Pick<Config, 'auditSigningKey' | 'auth'>): TreeSigner {
  const memo = config.auditSigningKey ?? `jwt:${config.auth.jwtSecret}`
  let signer = signers.get(memo)
  if (signer === undefined) {
    const key = privateKeyOf(config)
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' })
    signer = {
      keyId: createHash('sha256').update(spki).digest('hex'),
      publicKey: createPublicKey(key).export({ format: 'pem', type: 'spki' }).toString(),
      sign: message => sign(null, message, key)
    }
    signers.set(memo, signer)
  }
  return signer
}

function opaque8 (b: Buffer): Buffer {
  if (b.length === 0 || b.length > 255) throw new Error('opaque<1..255> out of range')
  return Buffer.concat([Buffer.from([b.length]), b])
}

function uint64 (n: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64BE(BigInt(n))
  return b
}

/**
 * The signed bytes, in TLS presentation language after RFC 9162's TreeHeadDataToBeSigned, with the
 * tenant added so that one tenant's head cannot pass for another's:
 *   opaque context<1..255> ("audit-tree-head-v1"); opaque tenant<1..255> (UTF-8);
 *   uint64 timestamp (ms since the epoch); uint64 tree_size; opaque root_hash<1..255> (32 bytes).
 */
export function treeHeadMessage (tenant: string, timestamp: number, treeSize: number, rootHash: Buffer): Buffer {
  return Buffer.concat([
    opaque8(Buffer.from(TREE_HEAD_CONTEXT)), opaque8(Buffer.from(tenant, 'utf8')),
    uint64(timestamp), uint64(treeSize), opaque8(rootHash)
  ])
}

export interface SignedTreeHead {
  tenant: string
  treeSize: number
  rootHash: string
  timestamp: number
  signature: string
  algorithm: 'Ed25519'
  keyId: string
  publicKey: string
}

export function signTreeHead (config: Pick<Config, 'auditSigningKey' | 'auth'>, tenant: string, treeSize: number, rootHash: Buffer, timestamp = Date.now()): SignedTreeHead {
  const signer = treeSigner(config)
  return {
    tenant,
    treeSize,
    rootHash: rootHash.toString('hex'),
    timestamp,
    signature: signer.sign(treeHeadMessage(tenant, timestamp, treeSize, rootHash)).toString('base64'),
    algorithm: 'Ed25519',
    keyId: signer.keyId,
    publicKey: signer.publicKey
  }
}

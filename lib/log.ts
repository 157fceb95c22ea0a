import bunyan from 'bunyan'
import type { LogLevel } from './config.js'

export type Logger = bunyan

// Secrets never reach a log line: these keys are replaced wherever they appear at the top
// level of a logged object or inside `headers`.
const SECRET_KEYS = new Set(['authorization', 'token', 'webhooktoken', 'licensekey', 'signingsecret', 'password', 'secret'])

function redact (value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.has(k.toLowerCase()) ? '[redacted]' : v
  return out
}

export function createLogger (name: string, level: LogLevel, stream: NodeJS.WritableStream = process.stdout): Logger {
  return bunyan.createLogger({
    name,
    level,
    streams: [{ level, stream }],
    serializers: { err: bunyan.stdSerializers.err, headers: redact, body: redact }
  })
}

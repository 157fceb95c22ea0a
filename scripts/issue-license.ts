// Development licenses: makes an RSA key pair (once, in --dir) and prints a license JWT signed
// with it for one tenant. Run: npm run license:issue -- --tenant acme --days 365 --limit object_count=1000 --feature graphql=false
// Then start the API and the worker with LICENSE_PUBLIC_KEY="$(cat <dir>/license-public.pem)" and
// either LICENSE_KEY=<the printed JWT> (every tenant) or POST /v1/license {"licenseKey": ...} (one tenant).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { generateKeyPairSync } from 'node:crypto'
import path from 'node:path'
import { parseArgs } from 'node:util'
import jwt from 'jsonwebtoken'

const USAGE = `usage: npm run license:issue -- [--tenant <id>] [--edition <name>] [--days <n>]
  [--limit <code>=<n>]... [--feature <name>=true|false]... [--meta <key>=<value>]... [--dir <folder>]
Without --tenant the license carries no tenant claim (fit for LICENSE_KEY, every tenant).`

function pairs (list: string[] | undefined, what: string): Array<[string, string]> {
  return (list ?? []).map(s => {
    const i = s.indexOf('=')
    if (i <= 0) throw new Error(`--${what} ${s}: expected <name>=<value>`)
    return [s.slice(0, i), s.slice(i + 1)]
  })
}

function main (): void {
  const { values } = parseArgs({
    options: {
      tenant: { type: 'string' },
      edition: { type: 'string', default: 'development-issued' },
      days: { type: 'string', default: '365' },
      limit: { type: 'string', multiple: true },
      feature: { type: 'string', multiple: true },
      meta: { type: 'string', multiple: true },
      dir: { type: 'string', default: '.license' },
      help: { type: 'boolean' }
    }
  })
  if (values.help === true) { console.log(USAGE); return }
  const days = Number(values.days)
  if (!Number.isFinite(days)) throw new Error('--days must be a number')
  const limits = Object.fromEntries(pairs(values.limit, 'limit').map(([k, v]) => {
    if (!/^\d+$/.test(v)) throw new Error(`--limit ${k}=${v}: the limit must be a whole number`)
    return [k, Number(v)]
  }))
  const features = Object.fromEntries(pairs(values.feature, 'feature').map(([k, v]) => [k, v !== 'false']))
  const metadata = { issuer: 'scripts/issue-license.ts', ...Object.fromEntries(pairs(values.meta, 'meta')) }

  const dir = path.resolve(values.dir)
  const privatePath = path.join(dir, 'license-private.pem')
  const publicPath = path.join(dir, 'license-public.pem')
  if (!existsSync(privatePath)) {
    mkdirSync(dir, { recursive: true })
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' }
    })
    writeFileSync(privatePath, pair.privateKey, { mode: 0o600 })
    writeFileSync(publicPath, pair.publicKey)
    console.error(`made a development key pair in ${dir}`)
  }
  const claims = { edition: values.edition, features, limits, metadata, ...(values.tenant !== undefined ? { tenant: values.tenant } : {}) }
  const token = jwt.sign(claims, readFileSync(privatePath, 'utf8'), { algorithm: 'RS256', expiresIn: Math.round(days * 86400) })
  console.error(`license for ${values.tenant ?? 'every tenant'}: ${JSON.stringify(claims)}, expires in ${days} days`)
  console.error(`public key: ${publicPath}  (export LICENSE_PUBLIC_KEY="$(cat ${publicPath})")`)
  console.log(token)
}

try {
  main()
} catch (err) {
  console.error(`${(err as Error).message}\n${USAGE}`)
  process.exit(1)
}

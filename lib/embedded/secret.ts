import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'

// The data folder's two small files: the lock that keeps a second process out, and the token
// secret made on first start. Neither loads PGlite (the token command uses the secret).

/** A second process on the same data folder would corrupt it: the first holds this file. */
export class DataDirLockedError extends Error {}

const LOCK = 'server.lock'
const SECRET = 'jwt-secret'

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

/** Takes the data folder's lock file (holding our pid); a lock whose process is gone is taken over. */
export function lockDataDir (dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, LOCK)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => {
        try { if (fs.readFileSync(file, 'utf8') === String(process.pid)) fs.unlinkSync(file) } catch { /* already gone */ }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = Number(fs.readFileSync(file, 'utf8'))
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new DataDirLockedError(`the data folder ${dataDir} is in use by another process (pid ${pid}); ` +
          'embedded mode allows one process per data folder: stop that one, or set DATA_DIR to another folder')
      }
      fs.unlinkSync(file)   // stale: its process is gone
    }
  }
  throw new DataDirLockedError(`cannot take the lock ${file}`)
}

/** The HS256 secret of embedded mode: made once (random, 48 bytes) and kept in the data folder. */
export function embeddedSecret (dataDir: string): string {
  fs.mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, SECRET)
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const secret = randomBytes(48).toString('base64url')
  try {
    fs.writeFileSync(file, secret + '\n', { flag: 'wx', mode: 0o600 })
    return secret
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(file, 'utf8').trim()
    throw err
  }
}


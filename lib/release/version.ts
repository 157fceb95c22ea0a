import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The release this code is: package.json's version, found from source or from dist/. */
export function packageVersion (): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const p = path.join(dir, 'package.json')
    if (existsSync(p)) return (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version
    dir = path.dirname(dir)
  }
  return '0.0.0'
}

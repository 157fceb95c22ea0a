import { createDb } from './lib/db.js'
import { benchLicense } from './bench/license.js'
const url = 'postgres://postgres@127.0.0.1:5432/spatial_bench_license'
const db = createDb(url, { poolMax: 16 })
await benchLicense(db, url, Number(process.env.ROUNDS ?? 3), l => console.log(l))
await db.destroy()

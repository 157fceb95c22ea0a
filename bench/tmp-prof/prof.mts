import { startServer, newTenant, publishedType } from '../../test/support/harness.js'
const s = await startServer()
const owner = s.as(newTenant('prof'), ['owner'])
const typeId = await publishedType(owner, { geometry: { required: true, types: ['Point'] } })
const items = Array.from({ length: 300 }, (_, i) => ({ typeId, attributes: { name: `site ${i}`, height: i % 50 }, geometry: { type: 'Point', coordinates: [13 + i / 1000, 52.5] } }))
await owner.post('/v1/objects/batch', { items })
const q = { query: '{ objects(limit: 100) { id typeId attributes geometry } }' }
async function time (label: string, f: () => Promise<unknown>, n: number) {
  for (let i = 0; i < 30; i++) await f()
  const t = performance.now()
  const c = process.cpuUsage()
  for (let i = 0; i < n; i++) await f()
  const u = process.cpuUsage(c)
  console.log(label, ((performance.now() - t) / n).toFixed(2), 'ms/req wall', ((u.user + u.system) / 1000 / n).toFixed(2), 'ms/req cpu')
}
const mode = process.argv[2] ?? 'both'
for (let r = 0; r < 3; r++) {
  if (mode !== 'gql') await time('rest', () => owner.get('/v1/objects?limit=100'), 200)
  if (mode !== 'rest') await time('gql ', () => owner.post('/v1/graphql', q), 200)
}
await s.close()

import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { render, renderText, findBadTemplate, TemplateError, type TemplateScope } from '../../lib/automation/templates.js'
import { evaluateMatch, parsePath } from '../../lib/automation/match.js'
import { evaluateLogic, checkLogic } from '../../lib/jsonlogic.js'
import { backoffSeconds, isBlockedAddress, redactUrl, signBody } from '../../lib/automation/index.js'

const scope: TemplateScope = {
  object: { id: 'o1', typeId: 't1', workflowState: 'draft', attributes: { name: 'Mast', height: 12.5, tags: ['a'] } },
  payload: { vehicle: { id: 'v9' }, items: [{ n: 1 }] },
  tenant: 'acme', ruleId: 'r1', runId: 'run1', now: '2026-01-02T03:04:05.678Z'
}

describe('effect templates', () => {
  it('fills every variable; a whole-string template keeps the value type', () => {
    assert.deepEqual(render({ a: '{{object.attributes.height}}', b: 'id={{object.id}} in {{tenant}}', c: ['{{payload.vehicle.id}}', '{{payload.items.0.n}}'], d: '{{ run.id }}/{{rule.id}}/{{now}}' }, scope, 'effect.body'),
      { a: 12.5, b: 'id=o1 in acme', c: ['v9', 1], d: 'run1/r1/2026-01-02T03:04:05.678Z' })
    assert.equal(renderText('{{object.attributes.tags}}', scope, 'effect.url'), '["a"]')
  })
  it('names the variable and the path of a missing value instead of sending "undefined"', () => {
    assert.throws(() => render({ x: { y: 'v={{payload.nope}}' } }, scope, 'effect.body'), (e: unknown) => e instanceof TemplateError && /\{\{payload\.nope\}\} at effect\.body\.x\.y/.test(e.message))
    assert.throws(() => render('{{object.id}}', { ...scope, object: null }, 'effect.objectId'), TemplateError)
  })
  it('refuses unknown variables when a rule is saved', () => {
    assert.equal(findBadTemplate({ body: { ok: '{{payload.a}}', bad: ['{{process.env.SECRET}}'] } }, 'effect')?.path, 'effect.body.bad[0]')
    assert.equal(findBadTemplate({ body: { ok: '{{object.attributes.x}} {{now}}' } }, 'effect'), null)
  })
})

describe('match', () => {
  it('parses JSON paths and refuses other forms', () => {
    assert.deepEqual(parsePath('$.a.b[2]'), ['a', 'b', '2'])
    assert.deepEqual(parsePath("$['a b'].c"), ['a b', 'c'])
    assert.deepEqual(parsePath('$'), [])
    assert.equal(parsePath('a.b'), null)
    assert.equal(parsePath('$.a..b'), null)
  })
  it('applies each operator', () => {
    const p = { s: 'hello', n: 5, list: [1, 2], o: { k: null } }
    const ok = (path: string, operator: any, value?: unknown) => evaluateMatch({ type: 'attribute', path, operator, value }, p).ok
    assert.equal(ok('$.s', 'equals', 'hello'), true)
    assert.equal(ok('$.s', 'notEquals', 'hello'), false)
    assert.equal(ok('$.n', 'in', [4, 5]), true)
    assert.equal(ok('$.s', 'contains', 'ell'), true)
    assert.equal(ok('$.list', 'contains', 2), true)
    assert.equal(ok('$.o.k', 'exists'), true)
    assert.equal(ok('$.o.z', 'exists'), false)
    assert.equal(ok('$.n', 'greaterThan', 4), true)
    assert.equal(ok('$.n', 'lessThan', 4), false)
    assert.equal(ok('$.s', 'greaterThan', 4), false, 'a string never compares with a number')
  })
})

describe('JsonLogic geo operations', () => {
  const zone = { type: 'Polygon', coordinates: [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]] }
  const at = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] })
  const run = (rule: unknown, data: unknown) => evaluateLogic(rule, data)
  it('geoWithin: a point inside a polygon, given inline or as a Feature', () => {
    assert.deepEqual(run({ geoWithin: [{ var: 'p' }, zone] }, { p: at(13.5, 52.5) }), { ok: true, value: true })
    assert.deepEqual(run({ geoWithin: [{ var: 'p' }, { var: 'z' }] }, { p: at(15, 52.5), z: { type: 'Feature', properties: {}, geometry: zone } }), { ok: true, value: false })
  })
  it('geoDistanceWithin measures meters on the sphere to points and polygon edges', () => {
    // 1 degree of longitude at 52.5 N is about 67.8 km.
    assert.deepEqual(run({ geoDistanceWithin: [{ var: 'p' }, zone, 70_000] }, { p: at(15, 52.5) }), { ok: true, value: true })
    assert.deepEqual(run({ geoDistanceWithin: [{ var: 'p' }, zone, 60_000] }, { p: at(15, 52.5) }), { ok: true, value: false })
    assert.deepEqual(run({ geoDistanceWithin: [{ var: 'p' }, at(13, 52), 100] }, { p: at(13.0009, 52.0003) }), { ok: true, value: true })
    assert.deepEqual(run({ geoDistanceWithin: [{ var: 'p' }, zone, 0] }, { p: at(13.5, 52.5) }), { ok: true, value: true }, 'inside is distance 0')
  })
  it('geoIntersects, and a clear error for a value that is not GeoJSON', () => {
    assert.deepEqual(run({ geoIntersects: [{ var: 'l' }, zone] }, { l: { type: 'LineString', coordinates: [[12, 52.5], [13.5, 52.5]] } }), { ok: true, value: true })
    const bad = run({ geoIntersects: [{ var: 'x' }, zone] }, { x: 5 })
    assert.equal(bad.ok, false)
  })
  it('are known to the checker, which takes inline GeoJSON as data', () => {
    assert.equal(checkLogic({ and: [{ geoWithin: [{ var: 'p' }, zone] }, { geoDistanceWithin: [{ var: 'p' }, at(1, 2), 5] }] }, 'condition'), null)
    assert.equal(checkLogic({ and: [{ a: 1, b: 2 }] }, 'condition')?.path, 'condition.and[0]')
  })
})

describe('outgoing webhook safety', () => {
  it('blocks loopback, private, link-local, metadata and mapped addresses; allows public ones', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '224.0.0.1']) {
      assert.equal(isBlockedAddress(a), true, a)
    }
    for (const a of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8']) assert.equal(isBlockedAddress(a), false, a)
  })
  it('judges IPv6 forms that embed an IPv4 address by that address; IPv4-compatible ::/96 is always blocked', () => {
    const blocked = [
      '::127.0.0.1', '::7f00:1', '::a9fe:a9fe', '::8.8.8.8', '::', // IPv4-compatible (deprecated) and unspecified
      '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', // IPv4-mapped, dotted or hex
      '64:ff9b::127.0.0.1', '64:ff9b::a00:1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::808:808', // NAT64 (well-known and local-use prefixes)
      '2002:7f00:1::', '2002:a00:1:1234::5', '2002:a9fe:a9fe::1', '2002:c0a8:101::' // 6to4
    ]
    for (const a of blocked) assert.equal(isBlockedAddress(a), true, a)
    for (const a of ['::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '64:ff9b::5db8:d822', '2002:808:808::1']) assert.equal(isBlockedAddress(a), false, a)
  })
  it('backs off 1 s, 2 s, 4 s, 8 s', () => {
    assert.deepEqual([1, 2, 3, 4].map(backoffSeconds), [1, 2, 4, 8])
  })
  it('signs the exact body bytes with HMAC-SHA256', () => {
    const body = Buffer.from('{"a":1}')
    assert.equal(signBody('whsec_x', body), `sha256=${createHmac('sha256', 'whsec_x').update(body).digest('hex')}`)
  })
})

describe('the URL a run records', () => {
  it('redacts a user password and credential-named query values, and leaves other URLs as they were', () => {
    assert.equal(redactUrl('https://hooks.example.com/in?token=abc&api_key=def&id=7'), 'https://hooks.example.com/in?token=%5Bredacted%5D&api_key=%5Bredacted%5D&id=7')
    assert.equal(redactUrl('https://bot:hunter2@hooks.example.com/in'), 'https://bot:redacted@hooks.example.com/in')
    assert.equal(redactUrl('https://s3.example.com/b/k?X-Amz-Signature=ff&X-Amz-Credential=c&v=1'), 'https://s3.example.com/b/k?X-Amz-Signature=%5Bredacted%5D&X-Amz-Credential=%5Bredacted%5D&v=1')
    assert.equal(redactUrl('https://hooks.example.com/in?a=b+c&id=7'), 'https://hooks.example.com/in?a=b+c&id=7', 'unchanged, byte for byte')
  })
})

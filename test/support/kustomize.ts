import fs from 'node:fs'
import path from 'node:path'
import { parseAllDocuments } from 'yaml'

// The part of kustomize that deploy/kubernetes uses, so the manifests render without kubectl:
// resources (files, and folders holding a kustomization.yaml), namespace, images, and patches by
// path as strategic merges (maps merge; lists of named items merge by name; other lists are
// replaced; null deletes). Anything else in a kustomization.yaml is refused, so the manifests
// cannot drift into features this renderer would silently ignore.

export interface K8sObject {
  apiVersion: string
  kind: string
  metadata: { name: string, namespace?: string, [key: string]: unknown }
  [key: string]: unknown
}

interface Kustomization {
  resources?: string[]
  namespace?: string
  images?: Array<{ name: string, newName?: string, newTag?: string }>
  patches?: Array<{ path: string }>
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'patches'])

/** Reads every YAML document of a file (empty documents skipped). */
export function readYaml (file: string): K8sObject[] {
  const docs = parseAllDocuments(fs.readFileSync(file, 'utf8'))
  for (const d of docs) if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0].message}`)
  return docs.map(d => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null)
}

/** The objects `kustomize build dir` would print, in resource order. */
export function render (dir: string): K8sObject[] {
  const [k] = readYaml(path.join(dir, 'kustomization.yaml')) as unknown as Kustomization[]
  const unsupported = Object.keys(k).filter(key => !SUPPORTED.has(key))
  if (unsupported.length > 0) throw new Error(`${dir}/kustomization.yaml: ${unsupported.join(', ')} not supported by test/support/kustomize.ts`)
  const objects = (k.resources ?? []).flatMap(r => {
    const p = path.join(dir, r)
    return fs.statSync(p).isDirectory() ? render(p) : readYaml(p)
  })
  for (const { path: file } of k.patches ?? []) {
    for (const patch of readYaml(path.join(dir, file))) {
      const target = objects.find(o => o.kind === patch.kind && o.metadata.name === patch.metadata.name)
      if (target === undefined) throw new Error(`${dir}/${file}: no ${patch.kind} ${patch.metadata.name} to patch`)
      objects[objects.indexOf(target)] = merge(target, patch) as K8sObject
    }
  }
  if (k.namespace !== undefined) for (const o of objects) o.metadata.namespace = k.namespace
  for (const image of k.images ?? []) for (const o of objects) setImage(o, image)
  return objects
}

type Json = null | string | number | boolean | Json[] | { [key: string]: Json }

const isMap = (v: unknown): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v)
const named = (v: Json[]): v is Array<{ name: string }> => v.length > 0 && v.every(i => isMap(i) && typeof i.name === 'string')

function merge (base: unknown, patch: unknown): unknown {
  if (isMap(base) && isMap(patch)) {
    const out: Record<string, unknown> = { ...base }
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key]
      else out[key] = key in base ? merge(base[key], value) : value
    }
    return out
  }
  if (Array.isArray(base) && Array.isArray(patch) && named(base) && named(patch)) {
    const out: unknown[] = [...base]
    for (const item of patch) {
      const i = base.findIndex(b => b.name === item.name)
      if (i === -1) out.push(item)
      else out[i] = merge(base[i], item)
    }
    return out
  }
  return patch
}

/** kustomize's images transformer: every container whose image is `name` (any tag) gets the new one. */
function setImage (node: unknown, image: { name: string, newName?: string, newTag?: string }): void {
  if (Array.isArray(node)) { for (const n of node) setImage(n, image); return }
  if (!isMap(node)) return
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(value)) {
      for (const c of value) {
        if (!isMap(c) || typeof c.image !== 'string') continue
        const colon = c.image.lastIndexOf(':')
        const tagged = colon > c.image.lastIndexOf('/')
        const name = tagged ? c.image.slice(0, colon) : c.image
        const tag = image.newTag ?? (tagged ? c.image.slice(colon + 1) : undefined)
        if (name === image.name) c.image = (image.newName ?? name) + (tag === undefined ? '' : `:${tag}`)
      }
    }
    setImage(value, image)
  }
}

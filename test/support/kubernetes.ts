import * as core from 'kubernetes-models/v1'
import * as apps from 'kubernetes-models/apps/v1'
import * as batch from 'kubernetes-models/batch/v1'
import * as policy from 'kubernetes-models/policy/v1'
import * as autoscaling from 'kubernetes-models/autoscaling/v2'
import * as networking from 'kubernetes-models/networking.k8s.io/v1'
import * as keda from '@kubernetes-models/keda/keda.sh/v1alpha1'
import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import type { K8sObject } from './kustomize.js'

// Validates a Kubernetes object against the schema of its apiVersion and kind (kubernetes-models
// and its KEDA and prometheus-operator packages). Their schemas accept fields they do not declare,
// as the API server does by default, so a misspelt or misplaced field would pass; `strictCheck`
// adds the check kubectl's strict field validation makes.

interface ModelClass { apiVersion: string, kind: string, prototype: { validate: () => void } }

const MODELS = new Map<string, ModelClass>()
for (const group of [core, apps, batch, policy, autoscaling, networking, keda, monitoring]) {
  for (const value of Object.values(group) as unknown[]) {
    const m = value as Partial<ModelClass>
    if (typeof value === 'function' && typeof m.apiVersion === 'string' && typeof m.kind === 'string') MODELS.set(`${m.apiVersion}/${m.kind}`, m as ModelClass)
  }
}

/** The model of an object's apiVersion and kind; throws for one no package describes. */
export function modelOf (o: K8sObject): ModelClass {
  const model = MODELS.get(`${o.apiVersion}/${o.kind}`)
  if (model === undefined) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`)
  return model
}

/** Throws with every schema error, then with every field the schema does not know. */
export function validate (o: K8sObject): void {
  const model = modelOf(o)
  model.prototype.validate.call(o)
  const unknown = unknownFields(model, o)
  if (unknown.length > 0) throw new Error(`${o.kind} ${o.metadata.name}: unknown field(s) ${unknown.join(', ')}`)
}

/**
 * The fields of `o` that its schema never looks at. The packages' validators are compiled (ajv
 * standalone), so there is no schema to set additionalProperties on; instead the object is
 * validated once more through proxies that record every property the validator reads. A declared
 * field is always read (its type is checked), a key of a map is read when its value is checked;
 * a field the schema does not declare is never read.
 */
export function unknownFields (model: ModelClass, o: unknown): string[] {
  const read = new Set<string>()
  const all: string[] = []
  const watch = (v: unknown, at: string): unknown => {
    if (v === null || typeof v !== 'object') return v
    const copy = Array.isArray(v)
      ? v.map((x, i) => watch(x, `${at}/${i}`))
      : Object.fromEntries(Object.entries(v).map(([k, x]) => { all.push(`${at}/${k}`); return [k, watch(x, `${at}/${k}`)] }))
    return new Proxy(copy, {
      get (t, k, r) { if (typeof k === 'string') read.add(`${at}/${k}`); return Reflect.get(t, k, r) },
      ownKeys (t) { for (const k of Reflect.ownKeys(t)) if (typeof k === 'string') read.add(`${at}/${k}`); return Reflect.ownKeys(t) }
    })
  }
  model.prototype.validate.call(watch(o, ''))
  return all.filter(p => !read.has(p))
}

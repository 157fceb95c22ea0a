import { route } from '../http/route.js'
import type { RouteModule } from './index.js'
import * as license from '../../lib/license/index.js'

const S = license.schema

export const licenseRoutes: RouteModule = () => {
  return [
    route({
      method: 'get', path: '/v1/license', operationId: 'getLicense', tag: 'platform', auth: 'bearer',
      summary: 'The tenant\'s license: status, entitlements, usage and the deployment fingerprint (owner, admin or system_admin)',
      description: 'Needs license:read. Without LICENSE_PUBLIC_KEY the development edition (every feature, no limits, status valid). Otherwise the tenant\'s installed license, else LICENSE_KEY, else edition none (expired). usage holds the counters each limit is checked against; status moves valid -> expiring_soon -> expired by time alone.',
      responses: { 200: { description: 'the license', schema: S.LicenseBody } },
      example: { summary: 'The license in force and its usage', status: 200 }
    }, async req => ({ body: await license.getLicense(req.service) })),

    route({
      method: 'post', path: '/v1/license', operationId: 'installLicense', tag: 'platform', auth: 'bearer',
      summary: 'Install a license for the caller\'s tenant; it applies at once in every API and worker process (owner or system_admin)',
      description: 'The license JWT must verify with LICENSE_PUBLIC_KEY (RS256 only) and, when it carries a `tenant` claim, name the caller\'s tenant; ' +
        'otherwise 400 and nothing changes. With LICENSE_STORAGE_SECRET it is stored encrypted (AES-256-GCM); without, it lives in this process\'s memory only ' +
        '(`storage: "memory"` and a `warning` say so). Allowed while the current license is expired.',
      body: S.InstallLicenseBody,
      responses: { 200: { description: 'the license now in force (as GET), with where it is stored', schema: S.InstallResultBody } },
      example: { summary: 'Install a license for this tenant (a JWT signed with the vendor key)', body: { licenseKey: '{licenseKey}' }, status: 200 }
    }, async req => ({ body: await license.installLicense(req.service, req.body) })),
  ]
}

import * as license from '../../lib/license/index.js'
import * as policy from '../../lib/policy/index.js'
import type { GraphqlModule } from './common.js'
import type { GraphqlContext } from './context.js'

type Args = Record<string, any>

// The tenant's license (REST: /v1/license) and permission policy (REST: /v1/permissions/policy).
const LICENSE_FIELDS = `
      "valid -> expiring_soon -> expired, by time alone"
      status: LicenseStatus!
      edition: String!
      "Module switches; a feature the license does not name is on"
      features: JSON!
      "Ceilings per limit code (object_count, workflow_run_count, ...)"
      limits: JSON!
      "Current usage per limit code"
      usage: JSON!
      metadata: JSON!
      issuedAt: DateTime
      expiresAt: DateTime
      source: LicenseSource!
      "Stable across restarts; the same in every process of one deployment"
      deploymentFingerprint: String!`

export const administrationModule: GraphqlModule = {
  typeDefs: /* GraphQL */ `
    enum LicenseStatus { valid expiring_soon expired }
    enum LicenseSource { environment installed none }
    enum LicenseStorage { encrypted memory }

    "The tenant's license: status, entitlements and usage (needs license:read)"
    type License {${LICENSE_FIELDS}
    }

    "The license now in force, with where it is stored"
    type LicenseInstallResult {${LICENSE_FIELDS}
      storage: LicenseStorage!
      warning: String
    }

    "{roles: {role: {resource: [actions]}}}: effective grants of every built-in and custom role"
    type PermissionPolicy {
      roles: JSON!
      "0 until the first update; +1 on every update"
      version: Int!
      updatedAt: DateTime
    }

    extend type Query {
      license: License
      "Needs policy:read"
      permissionPolicy: PermissionPolicy
    }

    extend type Mutation {
      "Install a license JWT for the caller's tenant (needs license:write)"
      installLicense(licenseKey: String!): LicenseInstallResult!
      "Replace the policy (needs policy:write); version, when given, must be the current one (VERSION_CONFLICT)"
      updatePermissionPolicy(roles: JSON!, version: Int): PermissionPolicy!
    }
  `,
  resolvers: {
    Query: {
      license: (_: unknown, _a: Args, c: GraphqlContext) => license.getLicense(c.service),
      permissionPolicy: (_: unknown, _a: Args, c: GraphqlContext) => policy.getPolicy(c.service)
    },
    Mutation: {
      installLicense: (_: unknown, a: Args, c: GraphqlContext) => license.installLicense(c.service, { licenseKey: a.licenseKey }),
      updatePermissionPolicy: (_: unknown, a: Args, c: GraphqlContext) => policy.putPolicy(c.service, { roles: a.roles }, a.version ?? null)
    }
  }
}

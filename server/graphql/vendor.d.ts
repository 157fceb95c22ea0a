// graphql-depth-limit ships no types (and @types/graphql-depth-limit pins graphql 14).
declare module 'graphql-depth-limit' {
  import type { ValidationRule } from 'graphql'
  export default function depthLimit (maxDepth: number, options?: { ignore?: Array<string | RegExp | ((name: string) => boolean)> }, callback?: (depths: Record<string, number>) => void): ValidationRule
}

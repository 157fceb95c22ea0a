import { setFlagsFromString } from 'node:v8'

// Imported first by every process entry (server, embedded, worker, the bench's HTTP floor).
// Large bodies (tiles, exports) live outside V8's heap; by default each 64 MB of them starts a
// full collection of the whole heap, however little of it is garbage. Counted against the heap's
// own limit instead, they no longer do (docs/performance.md).
setFlagsFromString('--external-memory-accounted-in-global-limit')

// The database tests run against: TEST_DATABASE_URL, or a local `spatial_test`.
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/spatial_test'
export const TEST_JWT_SECRET = 'test-secret-that-is-at-least-32-characters-long'

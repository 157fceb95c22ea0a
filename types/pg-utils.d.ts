declare module 'pg/lib/utils.js' {
  const utils: { prepareValue: (value: unknown) => unknown }
  export default utils
}

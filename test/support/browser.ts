import type { Browser, Page } from 'playwright-core'

/**
 * Debian's chromium (scripts/install.sh; CHROMIUM_PATH to override), headless, with WebGL through
 * SwiftShader: no GPU needed.
 */
export async function launchChromium (): Promise<Browser> {
  const { chromium } = await import('playwright-core')
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist']
  })
}

/** Collects every request the page makes outside `base` (blob: and data: aside): the page must make none. */
export function externalRequests (page: Page, base: string): string[] {
  const external: string[] = []
  page.on('request', req => { if (!req.url().startsWith(base) && !req.url().startsWith('blob:') && !req.url().startsWith('data:')) external.push(req.url()) })
  return external
}

import { isAppError, isTransient } from '../errors.js'

/** A check's refusal (an AppError) as a run's error `{code, message}`, null when it passes; anything else propagates. */
export async function refusalOf (check: Promise<void>): Promise<{ code: string, message: string } | null> {
  try {
    await check
    return null
  } catch (err) {
    if (!isAppError(err) || isTransient(err)) throw err
    return { code: err.code, message: err.message }
  }
}

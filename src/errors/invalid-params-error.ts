/** @module An argument or option that is not acceptable. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** An argument, option or request field is missing or malformed. Code `INVALID_PARAMS`. */
export class InvalidParamsError extends AxonError {
  readonly code = 'INVALID_PARAMS' as const;
  /** The offending parameter, when one is to blame. */
  readonly param: string | undefined;
  /**
   * True when the request is well formed but asks for what is not the caller's to have (a
   * sandbox root outside the server's): HTTP 422 rather than 400.
   */
  readonly unprocessable: boolean;

  constructor(
    message: string,
    options: AxonErrorOptions & { readonly param?: string; readonly unprocessable?: boolean } = {},
  ) {
    super(message, {
      ...options,
      details: { ...options.details, ...(options.param ? { param: options.param } : {}) },
    });
    this.param = options.param;
    this.unprocessable = options.unprocessable ?? false;
  }
}

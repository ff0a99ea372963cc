/** The kinds of resource whose absence khrun reports as a NotFoundError. */
export type MissingResource = 'khcheck' | 'khjob' | 'HealthCheck' | 'khstate';

/** What was not found, as data a caller can act on without reading the message. */
export interface NotFoundData {
  resource: MissingResource;
  namespace: string;
  name: string;
}

/**
 * The base of every "this resource does not exist" error: `data` names the resource, the message says
 * what to do about it, `cause` keeps what revealed it. Subclasses only choose the wording.
 */
export class NotFoundError extends Error {
  override readonly name: string = 'NotFoundError';
  constructor(
    readonly data: NotFoundData,
    message: string = `${data.resource} ${data.namespace}/${data.name} not found`,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

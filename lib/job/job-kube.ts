import { classifyApiError, isNotFound, WriteConflict } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { writerAgent } from '../kube/kube-port.ts';
import { KH_GROUP, KH_VERSION } from '../state/resources.ts';
import { KHJOB_PLURAL, type KhJob } from './khjob.ts';

/** The khjob operations a khjob run needs: read it, and write its phase. */
export interface JobKube {
  readJob(namespace: string, name: string): Promise<KhJob | null>;
  /** Replaces the khjob with metadata.resourceVersion as precondition; throws WriteConflict on 409. */
  replaceJob(job: KhJob, writer?: string): Promise<KhJob>;
}

const co = { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL };

/** JobKube over the API server (responses feed the API server clock, as every engine's reads do). */
export function jobKube(client: KubeClient): JobKube {
  const custom = client.custom;
  return {
    async readJob(namespace, name) {
      try {
        return (await custom.getNamespacedCustomObject({ ...co, namespace, name })) as KhJob;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async replaceJob(job, writer) {
      try {
        return (await custom.replaceNamespacedCustomObject(
          { ...co, namespace: job.metadata.namespace, name: job.metadata.name, body: job },
          writerAgent(writer),
        )) as KhJob;
      } catch (error) {
        if (classifyApiError(error) === 'Conflict') throw new WriteConflict('Conflict', { cause: error });
        throw error;
      }
    },
  };
}

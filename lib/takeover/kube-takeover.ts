import { type KubernetesObject, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/kube-client.ts';
import { kubePort } from '../kube/kube-port.ts';
import { waitForSet } from '../kube/list-watch.ts';
import { retryTransient } from '../kube/transient.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhCheck,
  type KhState,
} from '../state/resources.ts';
import { TAKEOVER_ANNOTATION } from './installations.ts';
import type { TakeoverKube } from './port.ts';

const co = { group: KH_GROUP, version: KH_VERSION };

/** TakeoverKube over the API server, with the credentials of whoever runs the command. */
export function takeoverKube(client: KubeClient): TakeoverKube {
  const port = kubePort(client);
  const apps = client.apps;
  const custom = client.custom;
  const listAll = async <T>(plural: string) =>
    ((await retryTransient(() => custom.listClusterCustomObject({ ...co, plural }))) as { items: T[] }).items;
  return {
    readState: port.readState,
    createState: port.createState,
    replaceState: port.replaceState,
    listCheckPods: port.listCheckPods,
    removePod: port.removePod,
    listDeployments: async () => (await retryTransient(() => apps.listDeploymentForAllNamespaces())).items,
    async scale(install, replicas, record) {
      // One merge patch: the count and the record of what to restore travel together.
      await apps.patchNamespacedDeployment(
        {
          name: install.name,
          namespace: install.namespace,
          body: {
            metadata: { annotations: { [TAKEOVER_ANNOTATION]: record ? JSON.stringify(record) : null } },
            spec: { replicas },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    async waitForPodsGone(install, opts) {
      await waitForSet<KubernetesObject, true>({
        kc: client,
        path: `/api/v1/namespaces/${install.namespace}/pods`,
        labelSelector: install.selector,
        decide: (pods) => (pods.size === 0 ? true : undefined),
        timeoutMs: opts.timeoutMs,
        signal: opts.signal,
        description: `the pods of Deployment ${install.namespace}/${install.name} (${install.selector}) to be gone`,
      });
    },
    listChecks: () => listAll<KhCheck>(KHCHECK_PLURAL),
    listStates: () => listAll<KhState>(KHSTATE_PLURAL),
    waitForStates: (decide, opts) =>
      waitForSet<KhState, ReturnType<typeof decide> & {}>({
        kc: client,
        path: `/apis/${KH_GROUP}/${KH_VERSION}/${KHSTATE_PLURAL}`,
        decide: (items) => decide([...items.values()]) ?? undefined,
        ...opts,
      }),
  };
}

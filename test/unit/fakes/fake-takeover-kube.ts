import type { V1Deployment } from '@kubernetes/client-node';
import type { KhState } from '../../../lib/state/resources.ts';
import {
  type KuberhealthyInstall,
  TAKEOVER_ANNOTATION,
  type TakeoverRecord,
} from '../../../lib/takeover/installations.ts';
import type { TakeoverKube } from '../../../lib/takeover/port.ts';
import { FakeKube } from './fake-kube.ts';

/**
 * FakeKube plus a Kuberhealthy Deployment whose pods go away some time after it is scaled to zero (when
 * the test says so), recording every step in order.
 */
export class FakeTakeoverKube extends FakeKube implements TakeoverKube {
  readonly steps: string[] = [];
  private readonly stepWaiters: { name: string; resolve: () => void }[] = [];
  private podsGoneNow: () => void = () => {};
  private readonly podsGone = new Promise<void>((resolve) => {
    this.podsGoneNow = resolve;
  });
  khPods = 2;

  step(name: string) {
    this.steps.push(name);
    for (const w of this.stepWaiters.filter((w) => w.name === name)) w.resolve();
  }
  untilStep(name: string): Promise<void> {
    if (this.steps.includes(name)) return Promise.resolve();
    return new Promise((resolve) => this.stepWaiters.push({ name, resolve }));
  }
  /** Kuberhealthy's last pod terminated. */
  endPods() {
    this.khPods = 0;
    this.podsGoneNow();
  }
  deployment: V1Deployment = {
    metadata: { name: 'kuberhealthy', namespace: 'kuberhealthy', annotations: {} },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'kuberhealthy' } },
      template: {
        metadata: { labels: { app: 'kuberhealthy' } },
        spec: { containers: [{ name: 'kuberhealthy', image: 'kuberhealthy/kuberhealthy:v2.7.1' }] },
      },
    },
  };
  async listDeployments() {
    return [structuredClone(this.deployment)];
  }
  async scale(_install: KuberhealthyInstall, replicas: number, record: TakeoverRecord | null) {
    this.step(`scale ${replicas}`);
    this.deployment.spec!.replicas = replicas;
    const annotations = this.deployment.metadata!.annotations!;
    if (record) annotations[TAKEOVER_ANNOTATION] = JSON.stringify(record);
    else delete annotations[TAKEOVER_ANNOTATION];
  }
  async waitForPodsGone() {
    if (this.khPods > 0) await this.podsGone;
    this.step('pods gone');
  }
  async listChecks() {
    return [...this.checks.values()].map((c) => structuredClone(c));
  }
  async listStates() {
    return [...this.states.values()].map((s) => structuredClone(s));
  }
  async waitForStates<R>(decide: (states: KhState[]) => R | undefined) {
    let value: R | undefined;
    await this.until(() => {
      value = decide([...this.states.values()]);
      return value !== undefined;
    });
    return value as R;
  }
  override async replaceState(state: KhState) {
    this.step(`write ${state.metadata.namespace}/${state.metadata.name}`);
    return super.replaceState(state);
  }
}

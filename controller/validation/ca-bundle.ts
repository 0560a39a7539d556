// Puts the webhook's CA into a ValidatingWebhookConfiguration (every webhook's clientConfig.caBundle), so the API
// server trusts the certificate the controller serves with. Retried until it succeeds (the configuration may be
// installed after the controller starts), then checked every minute. Resolves after the first success.
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../common/log.js';

export function patchCaBundle(kubeConfig: k8s.KubeConfig, name: string, caPem: string, log: Logger, signal: AbortSignal): Promise<void> {
  const api = kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api);
  const caBundle = Buffer.from(caPem).toString('base64');
  /** true when it had to change it */
  const attempt = async (): Promise<boolean> => {
    const current = await api.readValidatingWebhookConfiguration({ name });
    const webhooks = current.webhooks ?? [];
    if (webhooks.every((w) => w.clientConfig.caBundle === caBundle)) return false;
    const body: object[] = webhooks.map((_w, i) => ({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }));
    // the list as read: a webhook added meanwhile fails the test op and the patch is made again
    body.unshift({ op: 'test', path: '/metadata/resourceVersion', value: current.metadata?.resourceVersion ?? '' });
    await api.patchValidatingWebhookConfiguration({ name, body }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch));
    return true;
  };
  // looked at again every minute: an upgrade of the chart may have put its own caBundle back
  return new Promise((resolve) => {
    let delay = 500;
    let first = true;
    const run = (): void => {
      if (signal.aborted) return;
      attempt().then(
        (changed) => {
          if (changed) log.info('webhook CA put into the ValidatingWebhookConfiguration', { name });
          if (first) resolve();
          first = false;
          delay = 500;
          setTimeout(run, 60_000).unref();
        },
        (error: unknown) => {
          log.warn('cannot put the webhook CA into the ValidatingWebhookConfiguration; retrying', { name, error, retryInMs: delay });
          setTimeout(run, delay).unref();
          delay = Math.min(30_000, delay * 2);
        },
      );
    };
    signal.addEventListener('abort', () => resolve());
    run();
  });
}

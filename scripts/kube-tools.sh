#!/usr/bin/env bash
# Builds the Kubernetes test servers (kube-apiserver, kubectl, etcd) and helm from the Go modules
# pinned in test/kube/tools/ into .cache/kube/bin, once; later runs reuse them. Test infrastructure
# only (the way controller-runtime's envtest gets its binaries), not part of `make run`.
#   about 4-5 min cold on 2 cores, ~3 GB linker peak, ~740 MB of modules in the Go module cache;
#   helm adds about 2-4 min (its own module set, ~430 modules) and is rebuilt alone when only its pin changes
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/kube/bin"
k8s_version="v1.37.2"
helm_version="v4.3.1"
mkdir -p "$out"

# helm (test/kube/tools/helm) has its own stamp, so adding or bumping it does not rebuild the servers
helm_stamp="$out/.helm-$helm_version-$(sha256sum <"$root/test/kube/tools/helm/go.sum" | cut -c1-16)"
if [[ ! -f "$helm_stamp" || ! -x "$out/helm" ]]; then
  echo "building helm $helm_version into $out (first time only: a minute or two)" >&2
  (cd "$root/test/kube/tools/helm" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
    -o "$out/helm" helm.sh/helm/v4/cmd/helm)
  rm -f "$out"/.helm-*
  touch "$helm_stamp"
  "$out/helm" version --short >&2
fi

stamp="$out/.built-$k8s_version-$(cat "$root"/test/kube/tools/{apiserver,etcd}/go.sum | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && -x "$out/kube-apiserver" && -x "$out/kubectl" && -x "$out/etcd" ]]; then
  exit 0
fi

ldflags="-s -w"
for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  # so /version reports the pinned release, not v0.0.0-master
  ldflags+=" -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
done

echo "building kube-apiserver, kubectl $k8s_version and etcd into $out (first time only: a few minutes)" >&2
(cd "$root/test/kube/tools/apiserver" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
(cd "$root/test/kube/tools/apiserver" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl)
(cd "$root/test/kube/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
rm -f "$out"/.built-*
touch "$stamp"
"$out/kube-apiserver" --version >&2

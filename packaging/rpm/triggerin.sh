# registrar-agent's %triggerin -- istio-sidecar (rpm): runs after Istio's package is installed
# or upgraded (after its %post, which gives /var/lib/istio/envoy and the mesh config back to
# istio-proxy every time), and after this package is installed beside it. Where the sidecar is
# turned on (its tmpfiles.d file is linked), the take-back moves aside what istio-proxy may have
# planted, and the check says whether istio will start (docs/security.md, "The VM side").
# Neither fails the transaction: istio's unit repairs and checks again before it starts.
for conf in /etc/tmpfiles.d/registrar-agent-sidecar.conf /usr/lib/tmpfiles.d/registrar-agent-sidecar.conf; do
  if [ -e "$conf" ] || [ -L "$conf" ]; then
    /opt/registrar-agent/istio-sidecar-repair.sh ||
      echo "registrar-agent: warning: the sidecar's take-back did not finish (above); istio will not start until it does" >&2
    /opt/registrar-agent/istio-sidecar-check.sh || :
    break
  fi
done
exit 0

# registrar-agent's %post (rpm; $1: 1 on install, 2 on upgrade). A first install enables the
# service and does not start it: the shipped /etc/registrar-agent/agent.yaml names no registrar
# yet. Upgrades restart in %postun, once the old package's files are gone.
if [ -e /usr/lib/tmpfiles.d/registrar-agent.conf ]; then
  systemd-tmpfiles --create registrar-agent.conf || :
fi
if [ "$1" -eq 1 ]; then
  systemctl daemon-reload >/dev/null 2>&1 || :
  systemctl enable registrar-agent.service >/dev/null 2>&1 || :
  echo "registrar-agent: installed and enabled, not started: set url, group, namespace and auth in /etc/registrar-agent/agent.yaml (docs/agent.md), then: systemctl start registrar-agent"
fi
exit 0

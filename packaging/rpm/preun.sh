# registrar-agent's %preun (rpm; $1: 0 on erase, 1 on upgrade). Erase stops the agent (it
# drains: its entry turns Draining, then disconnected) and disables it.
if [ "$1" -eq 0 ]; then
  systemctl disable --now registrar-agent.service >/dev/null 2>&1 || :
fi
exit 0

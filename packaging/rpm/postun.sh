# registrar-agent's %postun (rpm; $1: 0 after erase, 1 after upgrade). An upgrade restarts a
# running agent only: the old one drains, the new one registers again. Erase leaves the
# configuration (a changed agent.yaml as agent.yaml.rpmsave, the token) and the user.
systemctl daemon-reload >/dev/null 2>&1 || :
if [ "$1" -ge 1 ]; then
  systemctl try-restart registrar-agent.service >/dev/null 2>&1 || :
fi
exit 0

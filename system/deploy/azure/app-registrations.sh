#!/usr/bin/env bash
# Generated from system/topology.json (directory.applications) by system/deploy/generate.ts: do not edit.
# The app registrations of the Task Management Service, which ARM cannot create. Run once per tenant,
# after `az login` as someone allowed to register applications:
#   system/deploy/azure/app-registrations.sh --url developerPortal=https://… [--out FILE]
# Client ids and secrets go to FILE (mode 0600, default .taskstack/app-registrations.env), never to the terminal.
set -euo pipefail
declare -A url=()
out=.taskstack/app-registrations.env
usage() { cat <<'USAGE'
usage: system/deploy/azure/app-registrations.sh --url developerPortal=https://… [--out FILE]
Creates the app registrations of the Task Management Service (az ad app), once per tenant, after az login.
  --url NAME=URL  the address NAME's redirect URIs are on (needed: developerPortal)
  --out FILE      where client ids and secrets go, mode 0600 (default .taskstack/app-registrations.env)
  -h, --help      print this and exit
USAGE
}
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --url) url[${2%%=*}]=${2#*=}; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "app-registrations.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "${url[developerPortal]:-}" ]] || { echo "app-registrations.sh: give --url developerPortal=https://… (its address)" >&2; exit 2; }
umask 077
mkdir -p "$(dirname "$out")"
: >"$out"
new_uuid() { cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen; }

# taskWeb: Task Management web app (redirect URIs on web-b: set by taskstack deploy)
id=$(az ad app create --display-name 'Task Management web app' --sign-in-audience AzureADMyOrg --query appId --output tsv)
echo "TASKSTACK_TASK_WEB_CLIENT_ID=$id" >>"$out"
secret=$(az ad app credential reset --id "$id" --display-name taskstack --query password --output tsv)
echo "TASKSTACK_TASK_WEB_CLIENT_SECRET=$secret" >>"$out"

# taskApi: Task Management API
id=$(az ad app create --display-name 'Task Management API' --sign-in-audience AzureADMyOrg --query appId --output tsv)
echo "TASKSTACK_TASK_API_CLIENT_ID=$id" >>"$out"
az ad app update --id "$id" --identifier-uris "api://$id"
az ad app update --id "$id" --set "api={\"requestedAccessTokenVersion\":2,\"oauth2PermissionScopes\":[{\"id\":\"$(new_uuid)\",\"value\":\"user_impersonation\",\"type\":\"User\",\"isEnabled\":true,\"adminConsentDisplayName\":\"user_impersonation\",\"adminConsentDescription\":\"user_impersonation on Task Management API\"}]}"

# developerPortal: API Management developer portal
id=$(az ad app create --display-name 'API Management developer portal' --sign-in-audience AzureADMyOrg --web-redirect-uris "${url[developerPortal]}/signin-aad" "${url[developerPortal]}/" --query appId --output tsv)
echo "TASKSTACK_DEVELOPER_PORTAL_CLIENT_ID=$id" >>"$out"
secret=$(az ad app credential reset --id "$id" --display-name taskstack --query password --output tsv)
echo "TASKSTACK_DEVELOPER_PORTAL_CLIENT_SECRET=$secret" >>"$out"

echo "app registrations written to $out"

# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options of the modules that push a branch and open a pull/merge request.

    The argument spec is in plugins/module_utils/module.py.
    """

    DOCUMENTATION = r"""
options:
  remote:
    description: Git remote to push to. Default is C(gpufleet_fleet.gitops.remote).
    type: str
  base:
    description: Branch the pull request targets. Default is C(gpufleet_fleet.gitops.revision).
    type: str
  forge_api_url:
    description:
      - REST API root of the forge. Default is C(gpufleet_fleet.gitops.forge.api_url), else derived from
        C(gpufleet_fleet.gitops.repo_url) (C(https://api.github.com), C(https://<host>/api/v3) for GitHub
        Enterprise, C(https://<host>) for GitLab).
    type: str
  forge_token:
    description:
      - API token for the forge. Default is the environment variable named in
        C(gpufleet_fleet.gitops.forge.token_env). Never logged or returned.
    type: str
  open_pull_request:
    description: When publishing, also open the pull/merge request (else only push the branch).
    type: bool
    default: true
"""

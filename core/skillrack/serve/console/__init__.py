"""The operator console: server-rendered pages at ``/-/console``.

Overview, Skills, Tasks and Approvals, rendered by Jinja2 templates (package
data in ``templates/``) with no JavaScript at all: collapsible schema trees
are ``<details>`` elements, filters are GET forms, Grant and Deny are POST
forms with a CSRF token.  Who may read it is the operations endpoints' rule
(:mod:`skillrack.serve.bindings.operator_endpoints`); people sign in with
OpenID Connect or an API key (:mod:`skillrack.serve.console.signin`) and are
then known by a signed session cookie (:mod:`skillrack.serve.console.session`).
:class:`Console` builds the routes from :class:`ConsoleSources`, the objects
``build_server`` already holds.
"""

from skillrack.serve.console.routes import CONSOLE_PATH, Console, ConsoleSources

__all__ = ["CONSOLE_PATH", "Console", "ConsoleSources"]

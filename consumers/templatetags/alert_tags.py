"""{% firing_alerts cluster group %}: the alerts firing for a group, for the group page (the
live view does not know alerts; the page composes them)."""

from django import template

from ..alerts.selectors import firing_for

register = template.Library()


@register.inclusion_tag("alerts/_firing_for_group.html")
def firing_alerts(cluster: str, group: str) -> dict:
    return {"alerts": firing_for(cluster, group)}

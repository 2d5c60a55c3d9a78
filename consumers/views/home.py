from django.contrib.auth.decorators import permission_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..models import Cluster
from ..roles import VIEW, perm


@require_GET
@permission_required(perm(VIEW), raise_exception=True)
def home(request):
    clusters = Cluster.objects.all()
    return render(request, "consumers/home.html", {"clusters": clusters, "nav": "home"})

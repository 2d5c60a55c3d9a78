from django.urls import path

from .views import home

app_name = "consumers"

urlpatterns = [
    path("", home.home, name="home"),
]

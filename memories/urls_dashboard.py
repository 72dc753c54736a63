"""Dashboard pages of this app (htmx + server-rendered templates)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []

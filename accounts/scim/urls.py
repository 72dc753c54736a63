"""SCIM 2.0 routes, included by ``reasoningbank.urls`` under ``scim/v2/`` (RFC 7644 section 3.2)."""

from django.urls import path, re_path

from accounts.scim import views

urlpatterns = [
    path("Users", views.UsersView.as_view(), name="scim-users"),
    path("Users/<str:user_id>", views.UserView.as_view(), name="scim-user"),
    path("Groups", views.GroupsView.as_view(), name="scim-groups"),
    path("Groups/<str:group_id>", views.GroupView.as_view(), name="scim-group"),
    path("ServiceProviderConfig", views.ServiceProviderConfigView.as_view(), name="scim-service-provider-config"),
    path("ResourceTypes", views.ResourceTypesView.as_view(), name="scim-resource-types"),
    path("ResourceTypes/<str:type_id>", views.ResourceTypesView.as_view(), name="scim-resource-type"),
    path("Schemas", views.SchemasView.as_view(), name="scim-schemas"),
    path("Schemas/<str:schema_id>", views.SchemasView.as_view(), name="scim-schema"),
    # after every SCIM route: anything else under /scim/ is a SCIM 404
    re_path(r"^(?P<rest>.*)$", views.scim_not_found, name="scim-not-found"),
]

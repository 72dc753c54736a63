"""factory-boy factories for the fixed cast and its data."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from accounts.models import Membership, Organization, Project, Team


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.LazyAttribute(lambda o: o.email)
    email = factory.Sequence(lambda n: f"user{n}@example.com")
    password = factory.django.Password("correct-horse-battery")


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    plan = "free"


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    organization = factory.SubFactory(OrganizationFactory)
    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    organization = factory.SubFactory(OrganizationFactory)
    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organization = factory.SubFactory(OrganizationFactory)
    role = Membership.ROLE_MEMBER

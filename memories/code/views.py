"""The dashboard's Code page (docs/code-memory.md#browse-by-code): the anchored paths of the bank as a
tree, each directory expanded on demand (htmx: one directory's children per request, a hundred at a
time), and a file's memories with their symbol, lines, commit and state.

Read-only, like the memory list: a viewer sees it. The tenant comes from the signed-in membership
(``@org_view``), rows only through the selectors that take its principal, so another organization's
paths are simply not there. A bad parameter (a path outside the repository, an unknown project) is a
400 with the message on the page, never a 500."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import reachable_projects
from accounts.views_base import org_view
from memories.code.paths import directory_clean, path_spec_clean
from memories.code.selectors_browse import code_file_anchors, code_totals, code_tree
from reasoningbank.db_replica import replica_reads

TREE_PAGE = 100  # a directory's children per request; "Show more" asks for the next
FILE_PAGE = 25


class CodeForm(forms.Form):
    project = forms.ChoiceField(required=False, label="Project")
    dir = forms.CharField(required=False, max_length=1000, label="Directory")
    path = forms.CharField(required=False, max_length=1000, label="File")
    tree_page = forms.IntegerField(required=False, min_value=1, max_value=10_000)

    def __init__(self, *args: Any, projects: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [("", "All projects"), *((slug, slug) for slug in projects)]  # type: ignore[attr-defined]

    def clean_dir(self) -> str:
        try:
            return directory_clean(self.cleaned_data.get("dir") or "")
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_path(self) -> str:
        value = (self.cleaned_data.get("path") or "").strip()
        if not value:
            return ""
        try:
            clean = path_spec_clean(value)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        if clean.endswith("/"):
            raise forms.ValidationError("a file's path, without a trailing slash (a directory is ?dir=)")
        return clean


def _breadcrumbs(directory: str) -> list[tuple[str, str]]:
    """(name, directory) of each directory from the top down to ``directory``."""
    crumbs, head = [], ""
    for part in directory.rstrip("/").split("/") if directory else []:
        head += part + "/"
        crumbs.append((part, head))
    return crumbs


@org_view()
@require_GET
@replica_reads
def code_page(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(reachable_projects(principal).order_by("slug").values_list("slug", flat=True))
    form = CodeForm(request.GET, projects=projects)
    page_vars: dict[str, Any] = {"nav": "code", "form": form, "errors": []}
    if not form.is_valid():
        page_vars["errors"] = [f"{name}: {' '.join(map(str, errors))}" for name, errors in form.errors.items()]
        return render(request, "memories/code.html", page_vars, status=400)
    data = form.cleaned_data
    project, directory, path = data["project"] or None, data["dir"], data["path"]
    htmx = getattr(request, "htmx", None)
    partial = htmx is not None and bool(htmx) and not htmx.history_restore_request
    tree_page = data.get("tree_page") or 1
    if partial and "dir" in request.GET:  # a directory expanded, or its next hundred children
        tree = code_tree(
            principal, directory=directory, project=project, offset=(tree_page - 1) * TREE_PAGE, limit=TREE_PAGE
        )
        block = "entries" if tree_page > 1 else "children"
        return render(request, f"memories/code.html#{block}", {**page_vars, "tree": tree, "tree_page": tree_page})
    if path:
        anchors = Paginator(code_file_anchors(principal, path=path, project=project), FILE_PAGE)
        page_vars.update(path=path, page=anchors.get_page(request.GET.get("page")))
    if partial and path:  # a file clicked in the tree
        return render(request, "memories/code.html#file", page_vars)
    page_vars.update(
        project=project or "",
        tree=code_tree(
            principal, directory=directory, project=project, offset=(tree_page - 1) * TREE_PAGE, limit=TREE_PAGE
        ),
        tree_page=tree_page,
        totals=code_totals(principal, project=project),
        breadcrumbs=_breadcrumbs(directory),
    )
    return render(request, "memories/code.html", page_vars)

"""Dashboard pages of this app (htmx + server-rendered templates)."""

from django.urls import path

from consolidation import views
from consolidation.quality import views as quality_views
from consolidation.review import views as review_views

urlpatterns = [
    path("consolidation/", views.consolidation_index, name="consolidation"),
    path("consolidation/preview/", views.consolidation_preview, name="consolidation-preview"),
    path("consolidation/apply/", views.consolidation_apply, name="consolidation-apply"),
    path("consolidation/runs/<str:run_id>/", views.run_detail, name="consolidation-run"),
    path("consolidation/schedule/<slug:project_slug>/", views.schedule_update, name="consolidation-schedule"),
    path("consolidation/quality/", quality_views.quality_page, name="consolidation-quality"),
    path("consolidation/reviews/", review_views.review_queue_page, name="consolidation-reviews"),
    path(
        "consolidation/reviews/<int:review_id>/decide/",
        review_views.review_decide_action,
        name="consolidation-review-decide",
    ),
    path("consolidation/promotions/run/", review_views.promotions_run_action, name="consolidation-promotions-run"),
]

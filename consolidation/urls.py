from django.urls import path

from consolidation import api
from consolidation.promotion import api as api_promotion
from consolidation.review import api as api_quality

urlpatterns = [
    path("consolidation/runs", api.RunListCreateView.as_view(), name="api-consolidation-runs"),
    path("consolidation/runs/<str:run_id>", api.RunDetailView.as_view(), name="api-consolidation-run"),
    path("consolidation/disputes", api.DisputeListView.as_view(), name="api-disputes"),
    path("consolidation/disputes/<str:link_id>/resolve", api.DisputeResolveView.as_view(), name="api-dispute-resolve"),
    path("memories/<str:memory_id>/unmerge", api.MemoryUnmergeView.as_view(), name="api-memory-unmerge"),
    path("consolidation/reviews", api_quality.ReviewListView.as_view(), name="api-reviews"),
    path(
        "consolidation/reviews/<str:review_id>/decide", api_quality.ReviewDecideView.as_view(), name="api-review-decide"
    ),
    path("consolidation/promotions", api_promotion.PromotionRunView.as_view(), name="api-promotions"),
    path("projects/<str:slug>/quality", api_quality.ProjectQualityView.as_view(), name="api-project-quality"),
]

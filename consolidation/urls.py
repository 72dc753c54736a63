from django.urls import path

from consolidation import api
from consolidation.promotion import api as promotion_api
from consolidation.quality import api as quality_api
from consolidation.review import api as review_api

urlpatterns = [
    path("consolidation/runs", api.RunListCreateView.as_view(), name="api-consolidation-runs"),
    path("consolidation/runs/<str:run_id>", api.RunDetailView.as_view(), name="api-consolidation-run"),
    path("consolidation/reviews", review_api.ReviewListView.as_view(), name="api-reviews"),
    path(
        "consolidation/reviews/<str:review_id>/decide", review_api.ReviewDecideView.as_view(), name="api-review-decide"
    ),
    path("consolidation/promotions", promotion_api.PromotionRunView.as_view(), name="api-promotions"),
    path("projects/<str:slug>/quality", quality_api.ProjectQualityView.as_view(), name="api-project-quality"),
]
